"""The metadata columns every output row carries (their Arrow types), beside the input's own columns."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["META_COLUMNS"]

#: metadata columns added to every output row
META_COLUMNS: dict[str, pa.DataType] = {
    "rgda_status": pa.string(),  # original | accepted | rejected | failed
    "rgda_method": pa.string(),
    "rgda_source": pa.string(),  # key of the seed row
    "rgda_reason": pa.string(),  # why rejected or failed; for an accepted row, the checker's repairs (salvage)
    "rgda_gr_scores": pa.list_(pa.int64()),
    "rgda_ac_scores": pa.list_(pa.int64()),
    "rgda_trace": pa.string(),  # JSON: the seed's full record, on its first row; "" elsewhere
}
