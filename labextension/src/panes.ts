/**
 * The widget view's code panes follow its *source line* selector.
 *
 * tilemagic's ipywidgets stage view (tilemagic/widgets/view.py) re-renders its Description, IR, CUDA,
 * CUDA (emulated) and PTX panes when a source line is chosen: each is an ipywidgets `HTML` whose value is
 * replaced (`innerHTML`), so the new pane starts scrolled to the top and no `<script>` in it runs.  The
 * panes are `.tm-pane` scroll boxes (tilemagic/widgets/html.py); a pane that highlights line N says
 * `data-tm-highlight="N"` and each of its highlighted lines carries `data-tm-hl`.
 *
 * Here a MutationObserver on each notebook sees a pane of a widget view (`.tm-widget-view`) arrive in an
 * output area, and then:
 * - puts back the scroll position that the pane it replaced had (the user's scroll is kept, also when
 *   nothing is highlighted);
 * - when the pane highlights lines and the first one is not inside the pane's visible rectangle (below the
 *   sticky header), scrolls the pane box (only the pane: never the notebook) so that line sits near the top;
 * - hides the pane's `tm-hl-excerpt` (the copy of the highlighted lines that html.py puts above the code for
 *   front ends without this extension: here the pane scrolls instead).
 * A pane in a tab that is not shown has no layout: it is placed when it is first laid out (ResizeObserver).
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

const VIEW = '.tm-widget-view';
const PANE = 'tm-pane';
const HIGHLIGHTED = '.tm-line[data-tm-hl]';
const EXCERPT = '.tm-hl-excerpt';

/** scrollTop of the panes of each container (an ipywidgets HTML's content element), by pane index. */
const saved = new WeakMap<Element, number[]>();
/** Panes waiting for a layout (a hidden tab's). */
const waiting = new ResizeObserver(entries => {
  for (const entry of entries) {
    const pane = entry.target as HTMLElement;
    if (!pane.isConnected || place(pane)) {
      waiting.unobserve(pane);
    }
  }
});

function isPane(node: Node): node is HTMLElement {
  return node instanceof HTMLElement && node.classList.contains(PANE);
}

function indexOf(pane: HTMLElement): number {
  const box = pane.parentElement;
  return box ? Array.from(box.children).filter(isPane).indexOf(pane) : -1;
}

function remember(pane: HTMLElement): void {
  const box = pane.parentElement;
  const i = indexOf(pane);
  if (!box || i < 0) {
    return;
  }
  const tops = saved.get(box) ?? [];
  tops[i] = pane.scrollTop;
  saved.set(box, tops);
}

/**
 * Scroll `pane` (false when it has no layout yet): back to where the pane it replaced was, then, when its
 * first highlighted line is outside its visible rectangle, to that line.
 */
function place(pane: HTMLElement): boolean {
  if (pane.clientHeight === 0) {
    return false;
  }
  const box = pane.parentElement;
  const before = box ? saved.get(box)?.[indexOf(pane)] : undefined;
  if (before !== undefined) {
    pane.scrollTop = before;
  }
  const line = pane.querySelector<HTMLElement>(HIGHLIGHTED);
  if (!line) {
    return true;
  }
  const head = pane.firstElementChild as HTMLElement | null; // the sticky header
  const rect = pane.getBoundingClientRect();
  const top = rect.top + pane.clientTop + (head && head.tagName === 'DIV' ? head.offsetHeight : 0);
  const bottom = rect.top + pane.clientTop + pane.clientHeight;
  const at = line.getBoundingClientRect();
  if (at.top >= top && at.bottom <= bottom) {
    return true;
  }
  const margin = Math.min(2 * at.height, (bottom - top) / 4); // (a line or two of context above it)
  pane.scrollTop = Math.max(0, pane.scrollTop + (at.top - top) - margin);
  remember(pane);
  return true;
}

function follow(pane: HTMLElement): void {
  if (!pane.closest(VIEW)) {
    return;
  }
  pane.querySelectorAll<HTMLElement>(EXCERPT).forEach(e => {
    e.style.display = 'none';
  });
  const box = pane.parentElement;
  if (!pane.querySelector(HIGHLIGHTED) && !(box && saved.get(box)?.[indexOf(pane)])) {
    return; // (a first rendering, or nothing scrolled yet: nothing to do)
  }
  if (!place(pane)) {
    waiting.observe(pane);
  }
}

function panesIn(node: Node): HTMLElement[] {
  if (isPane(node)) {
    return [node];
  }
  return node instanceof HTMLElement ? Array.from(node.getElementsByClassName(PANE)) as HTMLElement[] : [];
}

/** Watch one notebook's outputs. */
export function watchPanes(panel: NotebookPanel): void {
  const node = panel.content.node;
  const observer = new MutationObserver(records => {
    for (const record of records) {
      const target = record.target;
      if (!(target instanceof Element) || !target.closest('.jp-OutputArea')) {
        continue; // (editors, prompts: not an output)
      }
      record.addedNodes.forEach(added => panesIn(added).forEach(follow));
    }
  });
  observer.observe(node, { childList: true, subtree: true });
  // a pane's scroll, the user's or ours, is what its replacement gets back (scroll events do not bubble)
  const onScroll = (event: Event) => {
    const t = event.target;
    if (t instanceof HTMLElement && t.classList.contains(PANE) && t.closest(VIEW)) {
      remember(t);
    }
  };
  node.addEventListener('scroll', onScroll, true);
  panel.disposed.connect(() => {
    observer.disconnect();
    node.removeEventListener('scroll', onScroll, true);
  });
}

/** Follow the panes of every notebook, those open now and those opened later. */
export function watchNotebooks(tracker: INotebookTracker): void {
  tracker.widgetAdded.connect((_, panel) => watchPanes(panel));
  tracker.forEach(panel => watchPanes(panel));
}
