package sae.connector;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("sae-ceph").options(...).load(path)}: Parquet (or Arrow IPC) files in CephFS read
 * through the {@code sae} object class, which filters and projects inside the OSDs and replies
 * with Arrow IPC that Spark reads as columnar batches; {@code df.write.format("sae-ceph")} writes
 * such files and commits them with a manifest (docs/connector.md).
 */
public final class SaeCephProvider implements TableProvider, DataSourceRegister {
  /** Arrow memory of every reader in this JVM (each task takes a child allocator). */
  static final BufferAllocator ROOT = new RootAllocator(Long.MAX_VALUE);
  /** Schemas by object (conf, pool, oid, size): an object's file never changes in place. */
  private static final Map<String, StructType> SCHEMAS = new ConcurrentHashMap<>();
  private StructType inferred;
  private List<CephFiles.ObjectRef> objects;   // the path's files, listed once per load() (null: no such path)
  private boolean listed;

  @Override
  public String shortName() {
    return Options.FORMAT;
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  /** The Arrow schema the OSD reads from the first file (or the {@code columns} option's part of it). */
  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    Options o = new Options(options);
    if (csvFiles(o)) {
      throw new IllegalArgumentException(Options.FORMAT + ": " + o.path + " holds CSV files, which store no schema; "
          + "give their columns in file order: spark.read.schema(...)");
    }
    StructType table = tableSchema(o);
    if (table == null && objects == null) throw missing(o);
    if (table == null) {
      throw new IllegalArgumentException(Options.FORMAT + ": no *.parquet, *.arrow or *.csv files under " + o.path
          + "; deploy data there first (or give the schema: spark.read.schema(...) reads an empty table)");
    }
    return table;
  }

  /**
   * The files a read of {@code options} (the data source's, with its {@code path}) reads, as JSON
   * {@code [[path, bytes], ...]}: what the manifests commit where a write made the directory (for an
   * application's own accounting: DataSource V2 reads have no {@code inputFiles()}).
   */
  public static String files(Map<String, String> options) throws IOException {
    Options o = new Options(options);
    List<List<Object>> out = new ArrayList<>();
    for (CephFiles.ObjectRef f : CephFiles.list(o.cephConf, o.cephUser, o.timeout, o.path)) {
      out.add(List.of(f.path(), f.size()));
    }
    return new ObjectMapper().writeValueAsString(out);
  }

  /**
   * Removes the directory (or file) {@code options}' {@code path} names and everything under it,
   * as the options' cephx user (the writer's: an application removing what it wrote); false when
   * there was nothing.
   */
  public static boolean delete(Map<String, String> options) throws IOException {
    Options o = new Options(options);
    return CephFiles.removeTree(CephFiles.mount(o.cephConf, o.cephUser, o.timeout), o.path.replaceAll("/+$", ""));
  }

  /** The table's schema from its files (read once per provider, i.e. per load()); null: no files. */
  private StructType tableSchema(Options o) {
    if (inferred == null) {
      StructType full = fileSchema(o);
      if (full == null) return null;
      if (!o.columns.isEmpty()) {
        for (String c : o.columns) {
          if (!Set.of(full.fieldNames()).contains(c)) {
            throw Options.bad("columns", c, "the files have " + String.join(", ", full.fieldNames()));
          }
        }
        inferred = new StructType(o.columns.stream().map(full::apply).toArray(StructField[]::new));
      } else {
        inferred = full;
      }
    }
    return inferred;
  }

  /**
   * The table of {@code properties}' path with {@code schema}. Nothing is asked of CephFS here: a
   * read lists the path when it builds its scan, a write only where the directory it makes was
   * there already (a one-object write into a new directory then costs no lookup before its
   * {@code mkdir}; docs/connector.md, "Storage operations of a one-object write").
   */
  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new SaeCephTable(new Options(properties), schema, this);
  }

  /**
   * The path's files (listed once per provider; null: no such path) once {@code schema} is found
   * to fit them: CSV files are read by the given schema, column by column (a write into their
   * directory is refused: it would mix formats); another file's columns must hold each schema
   * column with its type.
   */
  List<CephFiles.ObjectRef> fitting(Options o, StructType schema, boolean write) {
    if (csvFiles(o)) {
      if (write) {
        throw new IllegalArgumentException(Options.FORMAT + ": " + o.path + " holds CSV files; write the Parquet "
            + "output to a directory of its own");
      }
      if (!o.columns.isEmpty()) {
        throw Options.bad("columns", String.join(",", o.columns), "CSV files are read by the given schema, column "
            + "by column; give the whole schema (queries prune columns anyway)");
      }
      ArrowTypes.toArrow(schema);   // every column parseable, or one line naming it
      return objects;
    }
    StructType files = tableSchema(o);
    if (files == null) return objects;   // no files: an empty table of the given schema
    for (StructField f : schema.fields()) {   // a user schema must name file columns with their types
      StructField have = List.of(files.fields()).stream().filter(x -> x.name().equals(f.name())).findFirst()
          .orElseThrow(() -> new IllegalArgumentException(Options.FORMAT + ": schema column " + f.name()
              + " is not in the files (" + String.join(", ", files.fieldNames()) + ")"));
      if (!have.dataType().equals(f.dataType())) {
        throw new IllegalArgumentException(Options.FORMAT + ": schema column " + f.name() + " is "
            + f.dataType().simpleString() + " but the files hold " + have.dataType().simpleString());
      }
    }
    return objects;
  }

  static IllegalArgumentException missing(Options o) {
    return new IllegalArgumentException(Options.FORMAT + ": " + o.path + " does not exist in CephFS; deploy data "
        + "there (data_deploy) or write it first (df.write.format('sae-ceph'))");
  }

  /** The path's files, listed once per provider into {@link #objects} (null: no such path); CSV files do not
   * mix with others. */
  private List<CephFiles.ObjectRef> objects(Options o) throws IOException {
    if (this.listed) return objects;
    List<CephFiles.ObjectRef> listed = CephFiles.list(o.cephConf, o.cephUser, o.timeout, o.path);
    this.listed = true;
    if (listed == null) return null;
    long csv = listed.stream().filter(CephFiles::csv).count();
    if (csv > 0 && csv < listed.size()) {
      throw new IllegalArgumentException(Options.FORMAT + ": " + o.path + " mixes CSV files with Parquet or Arrow IPC "
          + "files; a CSV table needs its own directory");
    }
    objects = listed;
    return objects;
  }

  /** Whether the path's files are CSV (every one of them). */
  private boolean csvFiles(Options o) {
    try {
      List<CephFiles.ObjectRef> listed = objects(o);
      return listed != null && !listed.isEmpty() && CephFiles.csv(listed.get(0));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The first file's schema (from the class's schema method, once per object and JVM), or null when
   * the path holds no object file. */
  private StructType fileSchema(Options o) {
    try {
      List<CephFiles.ObjectRef> listed = objects(o);
      if (listed == null || listed.isEmpty()) return null;
      CephFiles.ObjectRef first = listed.get(0);
      String key = o.cephConf + "\0" + first.pool() + "\0" + first.oid() + "\0" + first.size();
      StructType known = SCHEMAS.get(key);
      if (known != null) return known;
      byte[] reply = Rados.connect(o.cephConf, o.cephUser, o.timeout).exec(first.pool(), first.oid(), "schema", new byte[0],
          4 << 20);
      Protocol.ScanException err = Protocol.error(ByteBuffer.wrap(reply));
      if (err != null) {
        throw new IllegalArgumentException("[" + Native.host() + " sae-ceph] " + first.path() + " (object "
            + first.oid() + "): " + err.getMessage());
      }
      try (BufferAllocator a = ROOT.newChildAllocator("sae-ceph schema", 0, Long.MAX_VALUE);
           ArrowStreamReader r = new ArrowStreamReader(new java.io.ByteArrayInputStream(reply), a)) {
        StructType schema = ArrowTypes.toSpark(r.getVectorSchemaRoot().getSchema(), first.path());
        SCHEMAS.put(key, schema);
        return schema;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The table: batch reads of the files listed when its scan is built (as Spark's file sources), and
   * batch writes (append, overwrite: {@link CephWrite}). */
  static final class SaeCephTable implements SupportsRead, SupportsWrite {
    private final Options options;
    private final StructType schema;
    private final SaeCephProvider provider;

    SaeCephTable(Options options, StructType schema, SaeCephProvider provider) {
      this.options = options;
      this.schema = schema;
      this.provider = provider;
    }

    @Override
    public String name() {
      return Options.FORMAT;
    }

    @Override
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return Set.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap ignored) {
      List<CephFiles.ObjectRef> objects = provider.fitting(options, schema, false);
      if (objects == null) throw missing(options);
      return new SaeScan.Builder(options, schema, objects);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      return new CephWrite.Builder(options, info, () -> provider.fitting(options, schema, true));
    }
  }
}
