"""Running privad on a Dask cluster: the cluster, partitioned input and output, one spend per job.

* :mod:`.cluster`: :func:`dask_client` connects to a scheduler (``tcp://host:port``) or
  starts a local cluster for the length of a job; an unreachable scheduler is a
  :class:`ClusterError`.
* :mod:`.tables`: :func:`open_partitioned` / :func:`read_partitioned` open a Parquet
  folder/file or CSV files as records held by the workers (:class:`PartitionedTable`, one
  block per input partition); :func:`write_columns` writes one output part per partition;
  :func:`atomic_folder` and :func:`release_folder` write partitioned output that appears
  complete or not at all, after the job's single ledger spend.

The computations themselves live with their schemes: ball counts and multiplicities in
:mod:`privad.geometry.distributed`, the estimator's ``engine="dask"`` in
:class:`privad.sensitive.SensitiveAnomalyIdentifier`, per-partition sensor perturbation in
:mod:`privad.relaxed.distributed`. See ``docs/distributed.md``.
"""

from privad.distributed.cluster import (
    ClusterError,
    check_scheduler_address,
    dask_client,
    default_workers,
)
from privad.distributed.tables import (
    PartitionedSource,
    PartitionedTable,
    atomic_folder,
    check_new_folder,
    open_partitioned,
    part_name,
    read_partitioned,
    release_folder,
    write_columns,
    write_part,
)

__all__ = [
    "ClusterError",
    "PartitionedSource",
    "PartitionedTable",
    "atomic_folder",
    "check_new_folder",
    "check_scheduler_address",
    "dask_client",
    "default_workers",
    "open_partitioned",
    "part_name",
    "read_partitioned",
    "release_folder",
    "write_columns",
    "write_part",
]
