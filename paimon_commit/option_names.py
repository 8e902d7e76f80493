"""The names of Apache Paimon's options (facts, from Paimon's CoreOptions and its Flink,
Spark and catalog option classes, master of 2026), so that an option a user gives can be told
apart from a typo of one.

Paimon tables may carry options this library does not act on, so a name here is not a
promise that it does anything (paimon_commit.options.OPTIONS are the ones it acts on); a key
that is in neither list but close to a name of either is most likely a typo.
"""
from __future__ import annotations

import difflib
import logging
import warnings
from typing import Any, Iterable, List, Mapping, Optional

__all__ = ["CORE_OPTION_NAMES", "OTHER_PAIMON_OPTION_NAMES", "PATTERN_PREFIXES",
           "OptionNameWarning", "closest_name", "check_table_option_names"]

log = logging.getLogger(__name__)

# CoreOptions keys, with their fallback and deprecated keys ('#' stands for a name).
CORE_OPTION_NAMES = frozenset("""
    add-column-before-partition aggregation.remove-record-on-delete
    alter-column-null-to-not-null.disabled async-file-write auto-create batch-scan-mode
    blob-as-descriptor blob-compaction.enabled blob-descriptor-field blob-field blob-view-field
    blob-view.resolve.enabled blob-write-null-on-fetch-failure blob-write-null-on-missing-file
    blob.copy-buffer-size blob.split-by-file-size blob.stored-descriptor-fields
    blob.target-file-size branch bucket bucket-append-ordered bucket-function.type bucket-key
    cache-page-size chain-table.chain-partition-keys chain-table.enabled
    chain-table.split.key-range-enabled chain-table.streaming.merge-snapshot
    changelog-file.compression changelog-file.format changelog-file.prefix
    changelog-file.stats-mode changelog-producer changelog-producer.lookup-wait
    changelog-producer.row-deduplicate changelog-producer.row-deduplicate-ignore-fields
    changelog.num-retained.max changelog.num-retained.min changelog.time-retained
    clustering.columns clustering.history-partition.idle-to-full-sort
    clustering.history-partition.limit clustering.incremental clustering.incremental.mode
    clustering.incremental.optimize-write clustering.strategy commit.callback.#.param
    commit.callbacks commit.discard-duplicate-files commit.force-compact
    commit.force-create-snapshot commit.max-retries commit.max-retry-wait commit.min-retry-wait
    commit.strict-mode.last-safe-snapshot commit.timeout commit.user-prefix
    compaction.delete-ratio-threshold compaction.file-num-limit
    compaction.force-rewrite-all-files compaction.force-up-level-0
    compaction.incremental-size-threshold compaction.max-size-amplification-percent
    compaction.min.file-num compaction.offpeak-ratio compaction.offpeak.end.hour
    compaction.offpeak.start.hour compaction.optimization-interval compaction.size-ratio
    compaction.skip-expired-partitions compaction.small-file-ratio
    compaction.total-size-threshold consumer-id consumer.changelog-only consumer.expiration-time
    consumer.ignore-progress consumer.mode continuous.discovery-interval
    cross-partition-upsert.bootstrap-parallelism cross-partition-upsert.index-ttl
    data-evolution.compaction.rewrite-row-ids data-evolution.enabled
    data-evolution.merge-into.file-pruning data-evolution.merge-into.source-persist
    data-evolution.reassign.skip-contiguous-row-count
    data-evolution.row-id-conflict-rewrite.max-size data-evolution.row-sidecar.enabled
    data-evolution.row-sidecar.max-selected-rows data-evolution.row-sidecar.max-selection-ratio
    data-file.external-paths data-file.external-paths.specific-fs
    data-file.external-paths.strategy data-file.external-paths.weights data-file.path-directory
    data-file.prefix data-file.thin-mode deduplicate.ignore-delete delete-file.thread-num
    delete.force-produce-changelog deletion-vector.index-file.target-size
    deletion-vectors.bitmap64 deletion-vectors.enabled deletion-vectors.merge-on-read
    deletion-vectors.modifiable disable-explicit-type-casting
    dynamic-bucket.assigner-parallelism dynamic-bucket.initial-buckets
    dynamic-bucket.max-buckets dynamic-bucket.target-row-num dynamic-partition-overwrite
    end-input.check-partition-expire file-index.in-manifest-threshold file-index.read.enabled
    file-operation.thread-num file-reader-async-threshold file.block-size file.compression
    file.compression.per.level file.compression.zstd-level file.format file.format.per.level
    file.suffix.include.compression first-row.ignore-delete force-lookup
    format-table.commit-hive-sync-url format-table.file.compression format-table.implementation
    format-table.partition-path-only-value format-table.scan.list-parallelism
    full-compaction.delta-commits full-text-index.search-mode global-index.build.max-parallelism
    global-index.build.max-shard global-index.column-update-action global-index.enabled
    global-index.external-path global-index.row-count-per-shard global-index.search-mode
    global-index.thread-num ignore-delete ignore-update-before incremental-between
    incremental-between-scan-mode incremental-between-tag-to-snapshot
    incremental-between-timestamp incremental-to-auto-tag index-file-in-data-file-dir
    key-value.sequence_number.enabled local-kv-db.block-size local-merge-buffer-size
    local-sort.max-num-file-handles log.scan log.scan.timestamp-millis lookup-compact
    lookup-compact.max-interval lookup-wait lookup.blob-as-descriptor
    lookup.cache-file-retention lookup.cache-max-disk-size lookup.cache-max-memory-size
    lookup.cache-rows lookup.cache-spill-compression lookup.cache.bloom.filter.enabled
    lookup.cache.bloom.filter.fpp lookup.cache.high-priority-pool-ratio
    lookup.continuous.discovery-interval lookup.hash-load-factor lookup.merge-buffer-size
    lookup.merge-records-threshold lookup.remote-file.enabled lookup.remote-file.level-threshold
    manifest-sort.enabled manifest-sort.max-rewrite-size manifest-sort.partition-field
    manifest.compression manifest.delete-file-drop-stats manifest.full-compaction-threshold-size
    manifest.merge-min-count manifest.merge-optimize.enabled manifest.target-file-size
    materialized-table.definition-query materialized-table.interval-freshness
    materialized-table.interval-freshness.time-unit materialized-table.logical-refresh-mode
    materialized-table.refresh-handler-bytes materialized-table.refresh-handler-description
    materialized-table.refresh-mode materialized-table.refresh-status merge-engine
    metadata.stats-dense-store metadata.stats-keep-first-n-columns metadata.stats-mode
    metadata.stats-mode.per.level metastore.partitioned-table metastore.tag-to-partition
    metastore.tag-to-partition.preview num-levels num-sorted-run.compaction-trigger
    num-sorted-run.stop-trigger orc.write.batch-size overwrite-upgrade page-size
    parquet.enable.dictionary parquet.variant.shreddingSchema partial-update.ignore-delete
    partial-update.remove-record-on-delete partial-update.remove-record-on-sequence-group
    partition partition.default-name partition.end-input-to-done partition.expiration-batch-size
    partition.expiration-check-interval partition.expiration-max-num
    partition.expiration-strategy partition.expiration-time
    partition.idle-time-to-report-statistic partition.legacy-name partition.mark-done-action
    partition.mark-done-action.custom.class partition.mark-done-action.http.params
    partition.mark-done-action.http.url partition.sink-strategy
    partition.timestamp-format.strict partition.timestamp-formatter partition.timestamp-pattern
    path pk-bitmap.index.columns pk-btree.index.columns pk-clustering-override
    pk-full-text.index.columns pk-multivalue.index.columns pk-vector.index.columns
    postpone.batch-write-fixed-bucket postpone.batch-write-fixed-bucket.max-parallelism
    postpone.batch-write-fixed-bucket.rescale-load-factor postpone.default-bucket-num
    postpone.merge-on-read postpone.target-row-num-per-bucket postpone.target-size-per-bucket
    primary-key primary-key.nullable query-auth.enabled read.batch-size record-level.expire-time
    record-level.time-field row-tracking.enabled row-tracking.partition-group-on-commit
    rowkind.field scalar-index.search-mode scan.bounded.watermark scan.bucket
    scan.creation-time-millis scan.fallback-branch scan.fallback-branch.read-fail-fast
    scan.fallback-delta-branch scan.fallback-snapshot-branch scan.file-creation-time-millis
    scan.ignore-corrupt-files scan.ignore-lost-files scan.manifest.parallelism
    scan.max-splits-per-task scan.mode scan.plan-auto-tag-for-read.time-retained
    scan.plan-sort-partition scan.primary-branch scan.snapshot-id scan.tag-name scan.timestamp
    scan.timestamp-millis scan.version scan.watermark sequence.field sequence.field.sort-order
    sequence.snapshot-ordering sink.clustering.by-columns sink.clustering.strategy
    sink.process-time-zone sink.watermark-time-zone snapshot.clean-empty-directories
    snapshot.expire.clean-empty-directories snapshot.expire.execution-mode snapshot.expire.limit
    snapshot.ignore-empty-commit snapshot.num-retained.max snapshot.num-retained.min
    snapshot.time-retained snapshot.watermark-idle-timeout
    sort-compaction.local-sample.magnification sort-compaction.range-strategy sort-engine
    sort-spill-buffer-size sort-spill-threshold source.split.open-file-cost
    source.split.target-size spill-compression spill-compression.zstd-level stream-scan-mode
    streaming-read-append-overwrite streaming-read-overwrite streaming.read.snapshot.delay
    table-read.sequence-number.enabled tag.automatic-completion tag.automatic-creation
    tag.batch.customized-name tag.callback.#.param tag.callbacks tag.create-success-file
    tag.creation-delay tag.creation-period tag.creation-period-duration
    tag.default-time-retained tag.num-retained-max tag.period-formatter tag.time-expire-enabled
    target-file-row-num target-file-size type variant.inferShreddingSchema
    variant.shredding.adaptive.maxInferBufferRow variant.shredding.adaptive.retentionRatio
    variant.shredding.inferenceMode variant.shredding.maxInferBufferRow
    variant.shredding.maxSchemaDepth variant.shredding.maxSchemaWidth
    variant.shredding.minFieldCardinalityRatio variant.shreddingSchema vector-field
    vector-index.search-mode vector-search.distribute.enabled
    vector-search.lateral-join.batch-size vector.file.format vector.target-file-size
    visibility-callback.check-interval visibility-callback.enabled visibility-callback.timeout
    write-buffer-for-append write-buffer-size write-buffer-spill.max-disk-size
    write-buffer-spillable write-max-writers-to-spill write-only write.batch-memory
    write.batch-size write.compaction-skip write.sequence-number-init-mode
    zorder.var-length-contribution
""".split()) | {
    "manifest.format",   # removed from Paimon in 2026 (apache/paimon#9154); older tables have it
}

# FlinkConnectorOptions, SparkConnectorOptions and CatalogOptions keys: found in table options
# of tables written by those engines; never a typo of a core option.
OTHER_PAIMON_OPTION_NAMES = frozenset("""
    allow-upper-case cache-enabled cache.deletion-vectors.max-num cache.expiration-interval
    cache.expire-after-access cache.expire-after-write cache.manifest.max-memory
    cache.manifest.small-file-memory cache.manifest.small-file-threshold
    cache.manifest.soft-values cache.partition.max-num cache.snapshot.max-num-per-table
    case-sensitive catalog-options-table.enabled changelog-producer.compaction-interval
    changelog.precommit-compact changelog.precommit-compact.buffer-size
    changelog.precommit-compact.thread-num client-pool-size commit.custom-listeners
    compaction.bucket-distribution-strategy end-input.watermark file-io.allow-cache
    filesystem.job-level-settings.enabled format-table.enabled
    format-table.repair.collect-statistics format-table.statistics.parallelism
    legacy-timestamp-mapping.enabled local-cache.block-size local-cache.dir local-cache.enabled
    local-cache.max-size local-cache.whitelist lock-acquire-timeout lock-check-max-sleep
    lock.enabled lock.type log.scan.remove-normalize lookup.async lookup.async-thread-number
    lookup.bootstrap-parallelism lookup.cache lookup.dynamic-partition
    lookup.dynamic-partition.refresh-interval lookup.dynamic-partition.refresh.async
    lookup.refresh.async lookup.refresh.async.pending-snapshot-count
    lookup.refresh.full-load-threshold lookup.refresh.time-periods-blacklist metastore
    partition.idle-time-to-done partition.mark-done-action.mode
    partition.mark-done.recover-from-state partition.time-interval precommit-compact
    read.allow.fullScan read.changelog read.shuffle-bucket-with-partition
    read.stream.maxBytesPerTrigger read.stream.maxFilesPerTrigger read.stream.maxRowsPerTrigger
    read.stream.maxTriggerDelayMs read.stream.minRowsPerTrigger requiredSparkConfsCheck.enabled
    resolving-file-io.enabled scan.bounded scan.dedicated-split-generation
    scan.infer-parallelism scan.infer-parallelism.max scan.max-snapshot.count scan.parallelism
    scan.partitions scan.remove-normalize scan.split-enumerator.batch-size
    scan.split-enumerator.mode scan.watermark.alignment.group scan.watermark.alignment.max-drift
    scan.watermark.alignment.update-interval scan.watermark.emit.strategy
    scan.watermark.idle-timeout sink.clustering.sample-factor sink.clustering.sort-in-cluster
    sink.committer-cpu sink.committer-memory sink.committer-operator-chaining
    sink.coordinator-commit.enabled sink.cross-partition.managed-memory
    sink.key-only-deletes.enabled sink.managed.writer-buffer-memory sink.operator-uid.suffix
    sink.parallelism sink.savepoint.auto-tag sink.use-managed-memory-allocator
    sink.writer-coordinator.cache-expire-after-access sink.writer-coordinator.cache-memory
    sink.writer-coordinator.cache-soft-values sink.writer-coordinator.enabled
    sink.writer-coordinator.page-size sink.writer-coordinator.prefetch-manifests sink.writer-cpu
    sink.writer-memory sink.writer-refresh-detectors source.checkpoint-align.enabled
    source.checkpoint-align.timeout source.operator-uid.suffix
    source.split.target-size-with-column-pruning streaming-read.shuffle-bucket-with-partition
    sync-all-properties table.type unaware-bucket.compaction.parallelism
    unaware-bucket.no-shuffle uri vector-search.lateral-join.parallelism warehouse
    write.data-evolution.update-conflict-retry.max-attempts
    write.data-evolution.update-conflict-retry.wait-ms
    write.hive-style-dynamic-partition.enabled write.merge-schema
    write.merge-schema.explicit-cast write.merge-schema.type-widening write.use-v2-write
""".split())

# Options whose keys embed a field, index or format name (fields.<field>.aggregate-function,
# file-index.bloom-filter.columns, parquet.*, orc.*, ...): any key under them is accepted.
PATTERN_PREFIXES = ("fields.", "file-index.", "parquet.", "orc.", "avro.", "csv.", "json.",
                    "text.", "blob-descriptor.", "commit.callback.", "tag.callback.")


class OptionNameWarning(UserWarning):
    """A table option that is not Paimon's and looks like a typo of one of Paimon's names."""


def closest_name(key: str, names: Iterable[str], cutoff: float = 0.85) -> Optional[str]:
    """The name among `names` most like `key` (difflib), or None when none is close."""
    match = difflib.get_close_matches(key.lower(), list(names), n=1, cutoff=cutoff)
    return match[0] if match else None


def check_table_option_names(options: Optional[Mapping[str, Any]],
                             what: str = "table option",
                             consequence: str = "kept as given; nothing reads it",
                             stacklevel: int = 3, strict: bool = False,
                             prefix: str = "") -> List[str]:
    """Warn (warnings.warn, OptionNameWarning; the CLI routes warnings to its log) about each
    key of `options` that is no Paimon option but close to one: a typo such as
    'snapshot.num-retaind.min' would be stored and never acted on. Keys far from every name
    are accepted silently (tables carry options of engines and versions this library does not
    know). Returns the warnings.

    strict: raise OptionError instead, where the user is typing the options now (Table.create,
    the Spark write that creates a table, --table-conf): the typo is fixed before it is
    stored; options a table already carries only warn (another engine may have put them).

    prefix: how the user spelled the keys ahead of the option name (the Spark data source's
    'paimon.'): the key and the suggestion are named with it, as typed."""
    if not options:
        return []
    from .options import OPTIONS   # the ones this library acts on (may postdate this list)
    known = CORE_OPTION_NAMES | OTHER_PAIMON_OPTION_NAMES | set(OPTIONS)
    out = []
    for key in options:
        k = str(key)
        if k in known or k.startswith(PATTERN_PREFIXES):
            continue
        near = closest_name(k, known)
        if near is None:
            continue
        if strict:
            from .errors import OptionError
            raise OptionError(f"{what} {prefix + k!r} is not a Paimon option: did you mean "
                              f"{prefix + near!r}?")
        message = (f"{what} {prefix + k!r} is not a Paimon option: did you mean "
                   f"{prefix + near!r}? "
                   f"({consequence})")
        # Only warnings.warn: logging it as well printed it twice in a script (logging's
        # last-resort handler and the warning), and twice in the CLI.
        warnings.warn(message, OptionNameWarning, stacklevel=stacklevel)
        out.append(message)
    return out
