"""Parquet files written once per item, compacted per table, and a DuckDB catalog of views over them.

Modules: schema (Arrow schemas of the records, record files), layout (where a run's tables live, the
manifest, scans), commit (a folder committed atomically), journal (the commit journal), compaction
(task folders folded into parts), views (the DuckDB catalogs).

Arrow schemas derive from the record models in ``harness.records``; nothing here declares a record's
column. A task's results land in a folder that appears atomically (written aside, then renamed), so a
run killed at any moment leaves either a complete folder or none, and a rerun redoes only what is missing.

Thousands of one-task files are right for commits and wrong for queries (DuckDB opens each one, every
query). So at the end of a stage ``compact`` folds the task folders committed since the last compaction
into one Parquet part per table under ``RUN/compacted/`` (sorted by instance_id, DuckDB-sized row
groups), and ``manifest.json`` there names the parts and the folders they cover, each by inode and
mtime. Compaction reads each folder's rows from the commit journal its writer appended them to (one
sequential file per writer process, see ``journal_append``), and from the folder's files only where no
journal record matches it. A catalog's views read the parts plus the task files no part covers yet, and
hide the part rows of folders replaced or removed since, so a resumed or running run is always complete
and never counted twice. Dot-folders (a writer's work in progress) are never read.

Schema versions: views read files with ``union_by_name``, so a later ``schema_version`` that adds
fields reads beside the current one (older rows get NULL there). A later version that renames or
retypes a field must map its old spelling in the view's SELECT, keyed by ``schema_version``.
"""

from curation.store.commit import commit_folder, sweep_partials
from curation.store.compaction import compact
from curation.store.journal import JOURNAL
from curation.store.layout import CATALOG, COMPACTED, MANIFEST, RUN_TABLES, load_manifest
from curation.store.schema import arrow_schema, read_records, write_records
from curation.store.views import build_catalog, build_run_catalog, connect, open_catalog, refresh_catalog

__all__ = [
    "CATALOG",
    "COMPACTED",
    "JOURNAL",
    "MANIFEST",
    "RUN_TABLES",
    "arrow_schema",
    "build_catalog",
    "build_run_catalog",
    "commit_folder",
    "compact",
    "connect",
    "load_manifest",
    "open_catalog",
    "read_records",
    "refresh_catalog",
    "sweep_partials",
    "write_records",
]
