"""Host-side store of recorded steps, bounded: a ring of the last N steps, or an evenly
thinned (decimated) history whose stride doubles whenever it fills."""

from __future__ import annotations


class HostLog:
    """Per-step entries (dicts of numpy arrays) in step order.

    ``max_steps=None`` keeps everything. With ``decimate=False`` the oldest entries are
    dropped beyond ``max_steps``; with ``decimate=True`` every other entry is dropped and
    the stride doubles, so the kept steps stay evenly spaced over the whole run.
    """

    def __init__(self, max_steps=None, decimate=False, every=1):
        self.max_steps, self.decimate, self.every = max_steps, decimate, every
        self.stride = 1
        self.entries: list[tuple[int, dict]] = []
        self.version = 0

    def wants(self, step: int) -> bool:
        return not self.decimate or (step // self.every) % self.stride == 0

    def append(self, step: int, entry: dict) -> None:
        if not self.wants(step):
            return
        self.entries.append((step, entry))
        self.version += 1
        if self.max_steps is None or len(self.entries) <= self.max_steps:
            return
        if self.decimate:
            while len(self.entries) > self.max_steps:
                self.stride *= 2
                self.entries = [e for e in self.entries
                                if (e[0] // self.every) % self.stride == 0]
        else:
            del self.entries[: len(self.entries) - self.max_steps]

    def __len__(self) -> int:
        return len(self.entries)
