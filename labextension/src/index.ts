/**
 * tilemagic's JupyterLab extension: `%%tilecopy` cells highlighted as the tilemagic cell language, and the
 * widget view's code panes scrolled to the lines its source-line selector highlights (panes.ts).
 *
 * A notebook's code cells are edited in the kernel's language (IPython); a cell whose first line is
 * `%%tilecopy` is switched to the `text/x-tilecopy` language registered here (and back when the line goes),
 * a CodeMirror StreamLanguage that colours what tilemagic's Pygments lexer (tilemagic/lang/highlight.py)
 * colours: the `%%tilecopy` line and its flags, statement keywords, buffer kinds, exec scopes and thread axes,
 * dtypes, layouts, tcgen05 shapes (tcgen05.ld/st's, tcgen05.cp's shape= and multicast= values), the `tcgen05.commit` /
 * `tcgen05.fence::KIND` statements, numbers, operators and comments.  The word lists are generated from the
 * Python package (`tools/labextension_words.py` writes src/words.json; a test keeps it in sync).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { LanguageSupport, StreamLanguage, StringStream } from '@codemirror/language';
import { watchNotebooks } from './panes';
import words from './words.json';

const MIME = 'text/x-tilecopy';

interface TileState {
  first: boolean; // at the statement's first word
  header: boolean; // on the %%tilecopy line
  layout: boolean; // after `@` in a declaration
  guard: boolean; // in the condition of `if COND: STATEMENT` (the statement starts after its `:`)
}

const set = (xs: string[]) => new Set(xs);
const DTYPES = set(words.dtypes);
const SCOPES = set(words.scopes);
const AXES = set(words.axes);
const SHAPES = set(words.shapes);
// the shape words that do not start with a digit (tcgen05.cp's multicast= values: warpx2::02_13, warpx4), longest
// first, as whole words
const WORD_SHAPES = new RegExp('^(?:' + words.shapes.filter((w: string) => !/^[0-9]/.test(w))
  .sort((a: string, b: string) => b.length - a.length).map((w: string) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  .join('|') + ')(?![A-Za-z0-9_])');
const LAYOUTS = set(['S', 'R', 'datapath', 'frag', 'swizzle']);
// `tcgen05.commit BAR`, `tcgen05.fence::after_thread_sync|before_thread_sync`: tcgen05 starts a statement
const STATEMENTS = set(['kernel', 'wait', 'cta_sync', 'cluster_sync', 'check', 'mbarrier', 'arrive', 'commit_group',
  'wait_group', 'bulk_commit_group', 'bulk_wait_group', 'fence', 'if', 'tcgen05']);
const KINDS = set(['global', 'shared', 'local', 'tmem']);
// the copy options (dispatch=, mbar=, ..., tcgen05.cp's shape= / multicast= / cta_group= / decompress=) and the
// fence kinds come from the package (words.json)
const INNER = set(['threads', 'cluster', 'at', 'sub_slab', 'ld', 'st', 'count', 'expect_tx', 'auto', 'phase', 'read',
  'and', 'proxy', 'async', 'commit', 'fence', ...words.options, ...words.tcgen05_fences]);

const tilecopy = StreamLanguage.define<TileState>({
  name: 'tilecopy',
  startState: () => ({ first: true, header: false, layout: false, guard: false }),
  token(stream: StringStream, state: TileState): string | null {
    if (stream.sol()) {
      state.first = true;
      state.header = false;
      state.layout = false;
      state.guard = false;
    }
    if (stream.eatSpace()) {
      return null;
    }
    if (stream.match(/^#.*/)) {
      return 'comment';
    }
    if (state.first && stream.match('%%tilecopy')) {
      state.first = false;
      state.header = true;
      return 'meta';
    }
    if (state.header) {
      if (stream.match(/^--[A-Za-z0-9-]+/)) {
        return 'attribute';
      }
      stream.match(/^("[^"]*"|'[^']*'|[^\s#]+)/);
      return 'string';
    }
    if (stream.match(/^(<-|->|==|!=|<=|>=)/)) {
      return 'operator';
    }
    if (stream.match(/^-?[0-9]+(?:x[0-9]+b(?:x2)?)?/)) {
      return SHAPES.has(stream.current()) ? 'atom' : 'number';
    }
    if (!state.first && stream.match(WORD_SHAPES)) {
      return 'atom';
    }
    if (stream.match(/^[A-Za-z_][A-Za-z0-9_]*/)) {
      const w = stream.current();
      const first = state.first;
      state.first = false;
      if (first) {
        if (w === 'if') {
          state.guard = true;
        }
        if (STATEMENTS.has(w) || KINDS.has(w)) {
          return 'keyword';
        }
        if (SCOPES.has(w) && stream.match(/^\s*\./, false)) {
          return 'builtin';
        }
      }
      if (w === 'copy' || w === 'copy_async') {
        return 'keyword';
      }
      if (INNER.has(w)) {
        return 'keyword';
      }
      if (DTYPES.has(w)) {
        return 'variable-2'; // (JupyterLab's highlight style colours it; it has no colour for typeName)
      }
      if (state.layout && LAYOUTS.has(w)) {
        return 'def';
      }
      if (AXES.has(w)) {
        return 'builtin';
      }
      if (state.layout && /^[DFB]$/.test(w)) {
        return 'atom';
      }
      return 'variable';
    }
    const c = stream.next();
    state.first = false;
    if (c === '@') {
      state.layout = true;
      return 'operator';
    }
    if (c === ':' && state.guard) {
      state.guard = false;
      state.first = true; // the guarded statement's first word
      return 'operator';
    }
    if (c === '=' || c === ':' || c === '+' || c === '.' || c === '<' || c === '>' || c === '!') {
      return 'operator';
    }
    return 'punctuation';
  },
  languageData: { commentTokens: { line: '#' } }
});

function isTilecopy(source: string): boolean {
  return /^%%tilecopy(\s|$)/.test(source);
}

function follow(panel: NotebookPanel): void {
  const notebook = panel.content;
  const update = () => {
    const kernelMime = notebook.codeMimetype;
    for (const cell of notebook.widgets) {
      if (cell.model.type !== 'code') {
        continue;
      }
      const want = isTilecopy(cell.model.sharedModel.getSource()) ? MIME : kernelMime;
      if (cell.model.mimeType !== want) {
        cell.model.mimeType = want;
      }
    }
  };
  notebook.modelContentChanged.connect(update);
  notebook.model?.metadataChanged.connect(() => requestAnimationFrame(update));
  panel.sessionContext.kernelChanged.connect(() => requestAnimationFrame(update));
  panel.context.ready.then(() => requestAnimationFrame(update));
  notebook.activeCellChanged.connect(update);
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'tilemagic-labextension:highlight',
  description: 'Highlight %%tilecopy cells as the tilemagic cell language',
  autoStart: true,
  requires: [IEditorLanguageRegistry, INotebookTracker],
  activate: (app: JupyterFrontEnd, languages: IEditorLanguageRegistry, tracker: INotebookTracker) => {
    languages.addLanguage({
      name: 'tilecopy',
      displayName: 'tilecopy',
      mime: MIME,
      extensions: ['tile'],
      load: async () => new LanguageSupport(tilecopy)
    });
    tracker.widgetAdded.connect((_, panel) => follow(panel));
    tracker.forEach(panel => follow(panel));
  }
};

const panes: JupyterFrontEndPlugin<void> = {
  id: 'tilemagic-labextension:follow-lines',
  description: 'Scroll the tilemagic widget view\'s code panes to the lines the source-line selector highlights',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => watchNotebooks(tracker)
};

export default [plugin, panes];
