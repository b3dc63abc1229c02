"""Independent reference models written from the hardware documents, importing nothing from tilemagic."""
