package sae.connector;

import com.sun.jna.Pointer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;

/**
 * {@code df.write.format("sae-ceph").mode("append" | "overwrite").save(dir)} (docs/connector.md,
 * "Writing"): each task writes its rows as single-row-group Parquet files of one RADOS object each,
 * at their final names ({@code part-<job>-<partition>-<task>-<attempt>-<n>.parquet}); the job
 * commits by writing one manifest ({@link Manifest}) naming the files of the attempts Spark's
 * commit coordinator let commit. Nothing is renamed and no task output is listed to commit it.
 */
final class CephWrite {
  private CephWrite() {}

  /** The write's builder; {@code truncate()} (mode overwrite) makes the new manifest replace the directory's output. */
  static final class Builder implements WriteBuilder, SupportsTruncate {
    private final Options options;
    private final LogicalWriteInfo info;
    private final Runnable fitsFiles;
    private boolean overwrite;

    /** {@code fitsFiles} refuses the write's schema where the directory's files hold other columns. */
    Builder(Options options, LogicalWriteInfo info, Runnable fitsFiles) {
      this.options = options;
      this.info = info;
      this.fitsFiles = fitsFiles;
    }

    @Override
    public WriteBuilder truncate() {
      overwrite = true;
      return this;
    }

    @Override
    public Write build() {
      return new Write() {
        @Override
        public BatchWrite toBatch() {
          try {
            return new Batch(options, info.schema(), overwrite, fitsFiles);
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      };
    }
  }

  /** The files one task attempt committed. */
  record Written(int partition, long task, int attempt, List<Manifest.Entry> files) implements WriterCommitMessage {}

  /** The job, on the driver: makes the directory, commits with one manifest or removes what it wrote. */
  static final class Batch implements BatchWrite {
    private final Options options;
    private final String dir;
    private final String job = UUID.randomUUID().toString().replace("-", "");
    private final boolean overwrite;
    private final Map<String, String> parquet;
    private final int objectSize;

    /** Makes the directory; where it was there already, {@code fitsFiles} checks the schema against its files. */
    Batch(Options options, StructType schema, boolean overwrite, Runnable fitsFiles) throws IOException {
      this.options = options;
      this.overwrite = overwrite;
      this.parquet = ObjectFiles.writeConf(schema);
      if (!options.path.startsWith("/")) {
        throw Options.bad("path", options.path, "give the absolute CephFS directory to write: save('/data/out')");
      }
      dir = options.path.replaceAll("/+$", "");
      Pointer m = mount(options);
      Boolean made = CephFiles.makeDir(m, dir);
      if (made == null) {
        throw new IllegalArgumentException(Options.FORMAT + ": " + dir + " is a file; give the directory to write");
      }
      if (!made) fitsFiles.run();
      // a directory made now has no layout of its own (as one data_deploy made has): nothing to ask
      long size = options.objectSize > 0 || made ? options.objectSize : CephFiles.dirObjectSize(m, dir);
      objectSize = (int) (size > 0 ? size : Options.DEFAULT_OBJECT_SIZE);
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      return new Factory(options, dir, job, parquet, objectSize);
    }

    @Override
    public boolean useCommitCoordinator() {
      return true;   // one attempt per partition commits
    }

    /**
     * Writes the manifest (the commit point), then removes what it supersedes: with overwrite, the
     * directory's earlier files and manifests; always, files of this job's attempts that did not
     * commit and are still there (their own abort removes them otherwise).
     */
    @Override
    public void commit(WriterCommitMessage[] messages) {
      try {
        Pointer m = mount(options);
        List<String> names = CephFiles.names(m, dir);
        Manifest.State before = CephFiles.state(m, dir, names);
        List<Manifest.Entry> files = new ArrayList<>();
        for (WriterCommitMessage w : messages) files.addAll(((Written) w).files());
        List<String> adopted = overwrite || before.committed() ? List.of() : before.visible();
        String manifest = Manifest.name(before.nextSeq(), job);
        byte[] text = Manifest.encode(before.nextSeq(), job, overwrite, files, adopted);
        CephFiles.create(m, dir + "/" + manifest, text, text.length, objectSize);
        Set<String> keep = new HashSet<>();
        files.forEach(f -> keep.add(f.name()));
        for (String n : names) {
          boolean old = overwrite && (Manifest.isManifest(n) || CephFiles.SUFFIXES.stream().anyMatch(n::endsWith));
          if (!keep.contains(n) && (old || Manifest.isPart(n, job))) CephFiles.unlink(m, dir + "/" + n);
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** Removes every file of this job: those the committed attempts reported and any other attempt's left. */
    @Override
    public void abort(WriterCommitMessage[] messages) {
      try {
        Pointer m = mount(options);
        for (String n : CephFiles.names(m, dir)) {
          if (Manifest.isPart(n, job)) CephFiles.unlink(m, dir + "/" + n);
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  private static Pointer mount(Options o) throws IOException {
    return CephFiles.mount(o.cephConf, o.cephUser, o.timeout);
  }

  /** Makes each task attempt's writer. */
  record Factory(Options options, String dir, String job, Map<String, String> parquet, int objectSize)
      implements DataWriterFactory {
    @Override
    public DataWriter<InternalRow> createWriter(int partition, long task) {
      TaskContext context = TaskContext.get();
      return new Writer(this, partition, task, context == null ? 0 : context.attemptNumber());
    }
  }

  /** One task attempt: rows into object files created at their final names. */
  static final class Writer implements DataWriter<InternalRow> {
    private final Factory f;
    private final int partition;
    private final long task;
    private final int attempt;
    private final List<String> created = new ArrayList<>();
    private final ObjectFiles files;

    Writer(Factory f, int partition, long task, int attempt) {
      this.f = f;
      this.partition = partition;
      this.task = task;
      this.attempt = attempt;
      this.files = new ObjectFiles(f.parquet(), f.objectSize(),
          n -> Manifest.partName(f.job(), partition, task, attempt, n), this::create);
    }

    private void create(String name, byte[] data, int len) throws IOException {
      String path = f.dir() + "/" + name;
      created.add(path);   // before creating: an abort removes it however far the creation got
      CephFiles.create(mount(f.options()), path, data, len, f.objectSize());
    }

    @Override
    public void write(InternalRow row) throws IOException {
      files.write(row);
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      return new Written(partition, task, attempt, files.finish());
    }

    @Override
    public void abort() throws IOException {
      files.close();
      Pointer m = mount(f.options());
      for (String path : created) CephFiles.unlink(m, path);
    }

    @Override
    public void close() {
      files.close();
    }
  }
}
