"""A table of many paths held as its paths' frames, put together only when read.

The kept paths' tables of a run (``timeseries``, ``pools``, ``models``, ``jobs``) are
hundreds of megabytes: concatenating them costs about a second per run, and a run that is
only written to disk never needs them in one piece. :class:`PathFrames` keeps the frames in
path order; :meth:`~PathFrames.frame` concatenates them once, on first use, as
``pd.concat(frames, ignore_index=True)`` would; :meth:`~PathFrames.to_parquet` writes them
one row group per frame, and the file reads back as that same frame.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd


class PathFrames:
    """Frames with the same columns, one per path, in path order."""

    def __init__(self, frames: list[pd.DataFrame]) -> None:
        self._frames = frames
        self._whole: pd.DataFrame | None = None if len(frames) > 1 else (frames[0] if frames else pd.DataFrame())

    def __len__(self) -> int:
        return len(self._whole) if self._whole is not None else sum(len(frame) for frame in self._frames)

    def frame(self) -> pd.DataFrame:
        """The whole table (made on the first call, then kept; the parts are let go)."""
        if self._whole is None:
            self._whole = pd.concat(self._frames, ignore_index=True)
            self._frames = []
        return self._whole

    def to_parquet(self, path: str | Path, index: bool = False) -> None:
        """Write the table as ``frame().to_parquet(path, index=False)`` would, without
        putting it together first."""
        if self._whole is not None or index:
            self.frame().to_parquet(path, index=index)
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        first = pa.Table.from_pandas(self._frames[0], preserve_index=False)
        with pq.ParquetWriter(path, first.schema) as writer:
            writer.write_table(first)
            for frame in self._frames[1:]:
                writer.write_table(pa.Table.from_pandas(frame, schema=first.schema, preserve_index=False))
