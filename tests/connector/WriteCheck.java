package sae.connector;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The write path's parts that need no cluster (tests/connector/test_write_files.py):
 * {@code files DIR ROWS OBJECT_SIZE} writes ROWS random rows (long, double, string with few
 * values, timestamp) through {@link ObjectFiles} into DIR, printing "file NAME ROWS BYTES" per
 * file; {@code state DIR} prints the {@link Manifest#state} of a local directory as JSON.
 */
public final class WriteCheck {
  public static void main(String[] args) throws IOException {
    Path dir = Path.of(args[1]);
    if (args[0].equals("files")) {
      StructType schema = new StructType().add("id", DataTypes.LongType).add("x", DataTypes.DoubleType)
          .add("s", DataTypes.StringType).add("t", DataTypes.TimestampType);
      ObjectFiles files = new ObjectFiles(ObjectFiles.writeConf(schema), Integer.parseInt(args[3]),
          n -> "part-" + n + ".parquet", (name, data, len) -> Files.write(dir.resolve(name),
              java.util.Arrays.copyOf(data, len)));
      Random r = new Random(42);
      for (long i = 0; i < Long.parseLong(args[2]); i++) {
        files.write(new GenericInternalRow(new Object[] {i, r.nextGaussian(),
            UTF8String.fromString("v" + r.nextInt(1000)), 1_700_000_000_000_000L + r.nextInt()}));
      }
      for (Manifest.Entry e : files.finish()) System.out.println("file " + e.name() + " " + e.rows() + " " + e.bytes());
    } else {
      List<String> names = new ArrayList<>();
      try (var s = Files.list(dir)) {
        s.forEach(p -> names.add(p.getFileName().toString()));
      }
      try {
        Manifest.State st = Manifest.state(names, CephFiles.SUFFIXES, n -> Files.readAllBytes(dir.resolve(n)));
        System.out.println(new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(java.util.Map.of(
            "visible", st.visible(), "committed", st.committed(), "leftovers", st.leftovers())));
      } catch (IOException e) {
        System.out.println("{\"error\": \"missing\"}");
      }
    }
  }
}
