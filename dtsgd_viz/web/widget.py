"""The base of the explorers the browser draws: an ``anywidget.AnyWidget`` whose ES module
is ``js/common.js`` followed by the explorer's own module, with two synced traits:
``data`` (what Python computed, plain data and binary buffers) and ``update`` (what the
controls show). A notebook saved with its widget state replays both with no kernel
(``js/static.js`` on the documentation site)."""

from __future__ import annotations

import os
import pathlib
from typing import Any, ClassVar

import anywidget
import numpy as np
import traitlets

__all__ = ["BrowserWidget", "module_source", "STILLS_ENV", "STILL_CAPTION_KEY"]

JS = pathlib.Path(__file__).parent / "js"
STILLS_ENV = "DTSGD_VIZ_STILLS"  # "1": each display also carries a still PNG (notebooks/build.py sets it)
STILL_CAPTION_KEY = "dtsgd_viz_still_caption"  # the output metadata key of the still's caption


def module_source(*names: str) -> str:
    """The ES module of an explorer: the shared helpers, then the files ``names`` (the
    explorer's own last; e.g. ``rule.js`` before it)."""
    return "\n".join((JS / name).read_text() for name in ("common.js", *names))


class BrowserWidget(anywidget.AnyWidget):
    """``data``: what the explorer draws (its ``*_state`` function's result);
    ``update``: the update its controls show, synced both ways (set it from Python to
    move the slider; read it after the reader moved it)."""

    _module: ClassVar[str | tuple[str, ...]] = ""  # its file in js/ (or files, its own last)
    data = traitlets.Dict().tag(sync=True)
    update = traitlets.Int(0).tag(sync=True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_module" in cls.__dict__ and cls._module:  # not the subclasses add_traits makes
            names = (cls._module,) if isinstance(cls._module, str) else cls._module
            cls._esm = module_source(*names)

    def snapshot_png(self) -> bytes | None:
        """A still picture of what the widget shows, for readers that run no scripts
        (None: none)."""
        return None

    def still_caption(self) -> str | None:
        """What the still picture shows, said under it: for an explorer with an ``update``
        trait, the update the still was drawn at (read when it is drawn, not from the
        notebook's saved state, which holds the last update a later cell set); None:
        no caption of its own."""
        update = getattr(self, "update", None)
        if not isinstance(update, (int, np.integer)):
            return None
        return f"Still picture of the explorer at update {int(update)} (live in Jupyter and on the documentation site)"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle  # (data, metadata) or data
        if os.environ.get(STILLS_ENV) == "1" and isinstance(data, dict):
            png = self.snapshot_png()
            if png is not None:
                import base64

                data["image/png"] = base64.b64encode(png).decode("ascii")
                caption = self.still_caption()
                if caption is not None:
                    metadata = bundle[1] if isinstance(bundle, tuple) and isinstance(bundle[1], dict) else {}
                    metadata[STILL_CAPTION_KEY] = caption
                    bundle = (data, metadata)
        return bundle
