package sae.indexed;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The partition structures (row chunks, key maps, versions, merges) against a plain model, with
 * no Spark application: one partition, random keys (repeated, null), random appends from random
 * older versions. Prints one line per check: {@code <check> ok <detail>} or {@code <check> FAIL <why>}.
 * Arguments: the number of versions, the largest append.
 */
public final class IndexModel {
  public static void main(String[] args) {
    int versions = Integer.parseInt(args[0]), largest = Integer.parseInt(args[1]);
    for (boolean string : new boolean[] {false, true}) {
      String name = string ? "string" : "long";
      StructType schema = new StructType().add("k", string ? DataTypes.StringType : DataTypes.LongType)
          .add("v", DataTypes.LongType).add("pad", DataTypes.StringType);
      KeyColumn key = new KeyColumn(schema, "k", 1);
      UnsafeProjection project = UnsafeProjection.create(schema);
      Random rnd = new Random(string ? 2 : 1);
      List<IndexedPartition> parts = new ArrayList<>();
      List<List<Object[]>> models = new ArrayList<>();   // each version's rows: {key or null, v}
      parts.add(IndexedPartition.empty(0, key));
      models.add(new ArrayList<>());
      long v = 0;
      int maxMaps = 0;
      for (int i = 0; i < versions; i++) {
        int parent = i < 12 ? i : rnd.nextInt(i + 1);      // a chain past a merge first, then branches
        int n = rnd.nextInt(largest + 1);
        List<Object[]> added = new ArrayList<>();
        List<InternalRow> rows = new ArrayList<>();
        for (int r = 0; r < n; r++) {
          Long k = rnd.nextInt(20) == 0 ? null : (long) rnd.nextInt(3 * largest + 1);
          added.add(new Object[] {k, v});
          Object kv = k == null ? null : string ? UTF8String.fromString("key-" + k) : (Object) k;
          UTF8String pad = UTF8String.fromString("x".repeat(rnd.nextInt(40)));
          rows.add(project.apply(new GenericInternalRow(new Object[] {kv, v++, pad})).copy());
        }
        parts.add(parts.get(parent).append(rows.iterator(), key));
        List<Object[]> model = new ArrayList<>(models.get(parent));
        model.addAll(added);
        models.add(model);
        maxMaps = Math.max(maxMaps, parts.get(parts.size() - 1).stats().maps());
      }
      String fail = null;
      for (int i = 0; i < parts.size() && fail == null; i++) {
        fail = check(parts.get(i), models.get(i), string, 3 * largest + 5);
        if (fail != null) fail = "version " + i + ": " + fail;
      }
      System.out.println(name + " " + (fail == null
          ? "ok " + parts.size() + " versions, at most " + maxMaps + " maps" : "FAIL " + fail));
    }
  }

  /** Every key's rows (and absent keys' none) and the scan, against the model. */
  private static String check(IndexedPartition p, List<Object[]> model, boolean string, int keys) {
    Map<Long, List<Long>> byKey = new HashMap<>();
    for (Object[] r : model) {
      if (r[0] != null) byKey.computeIfAbsent((Long) r[0], x -> new ArrayList<>()).add((Long) r[1]);
    }
    for (long k = 0; k < keys; k++) {
      Object internal = string ? UTF8String.fromString("key-" + k) : (Object) k;
      List<Long> got = new ArrayList<>();
      for (Iterator<UnsafeRow> it = p.lookup(new Object[] {internal}); it.hasNext(); ) got.add(it.next().getLong(1));
      List<Long> want = new ArrayList<>(byKey.getOrDefault(k, List.of()));
      java.util.Collections.reverse(want);   // newest first, as the chain runs
      if (!got.equals(want)) return "key " + k + ": " + got + " != " + want;
    }
    List<Long> scanned = new ArrayList<>();
    for (Iterator<UnsafeRow> it = p.scan(); it.hasNext(); ) scanned.add(it.next().getLong(1));
    List<Long> all = new ArrayList<>();
    for (Object[] r : model) all.add((Long) r[1]);
    if (!scanned.equals(all)) return "scan " + scanned.size() + " rows != " + all.size();
    PartitionStats s = p.stats();
    long nulls = model.stream().filter(r -> r[0] == null).count();
    if (s.rows() != model.size() || s.nullKeyRows() != nulls || s.keys() != byKey.size()) {
      return "stats rows " + s.rows() + "/" + model.size() + " nulls " + s.nullKeyRows() + "/" + nulls + " keys "
          + s.keys() + "/" + byKey.size();
    }
    return null;
  }
}
