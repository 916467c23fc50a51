"""sparsekm's file format, private: the public face is :mod:`sparsekm.persistence`.

One module per concern:

* :mod:`.format` -- the format's names, :class:`FormatError`, the signature's tag;
* :mod:`.bounds` -- every bound the reader applies (memory, sizes, counts), in one place;
* :mod:`.spec` -- the spec language of fitted-state declarations (``_persist_attrs``);
* :mod:`.registry` -- registered classes, their declarations and consistency checks;
* :mod:`.encoder` -- objects to JSON nodes and arrays;
* :mod:`.atomic` -- :func:`save`: encode, write a locked temporary file, rename;
* :mod:`.zipreader` -- the ZIP container, checked before and beside :mod:`zipfile`;
* :mod:`.decoder` -- JSON nodes and arrays back to checked objects;
* :mod:`.loader` -- :func:`load`.
"""
