import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.sources.StringEndsWith;
import org.apache.spark.sql.sources.StringStartsWith;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import sae.connector.Protocol;

/**
 * Test harness (tests/connector/test_protocol.py): the Java encoder on tests/vectors/scan. Prints
 * "const:<name> <value>" for the protocol constants it was compiled with, "<vector name> <hex>"
 * for each well-formed request vector rebuilt from its JSON parse, then "spark:<vector name>
 * <hex>" (or "spark:<case> kept") for Spark filters through the translator. With "--reply
 * FILE..." it decodes scan replies instead.
 */
public final class ProtocolVectors {
  static Protocol.Node node(JsonNode n) {
    var it = n.fieldNames();
    String key = null;
    while (it.hasNext()) {
      String k = it.next();
      if (!List.of("column", "value", "values", "pattern").contains(k)) key = k;
    }
    JsonNode arg = n.get(key);
    switch (key) {
      case "and", "or" -> {
        List<Protocol.Node> kids = new ArrayList<>();
        arg.forEach(k -> kids.add(node(k)));
        return key.equals("and") ? Protocol.and(kids) : Protocol.or(kids);
      }
      case "not" -> {
        return Protocol.not(node(arg));
      }
      case "cmp" -> {
        return Protocol.cmp(arg.asText(), n.get("column").asText(), literal(n.get("value")));
      }
      case "is_null" -> {
        return Protocol.isNull(arg.asText());
      }
      case "is_not_null" -> {
        return Protocol.isNotNull(arg.asText());
      }
      case "in" -> {
        List<Object> values = new ArrayList<>();
        n.get("values").forEach(v -> values.add(literal(v)));
        return Protocol.in(arg.asText(), values);
      }
      default -> {
        return Protocol.match(key, arg.asText(), n.get("pattern").asText());
      }
    }
  }

  static Object literal(JsonNode v) {
    if (v.has("timestamp_us")) return LocalDateTime.ofInstant(instant(v.get("timestamp_us").longValue()), ZoneOffset.UTC);
    if (v.has("timestamp_us_utc")) return instant(v.get("timestamp_us_utc").longValue());
    if (v.isBoolean()) return v.booleanValue();
    if (v.isIntegralNumber()) return v.longValue();
    if (v.isFloatingPointNumber()) return v.doubleValue();
    return v.textValue();
  }

  static Instant instant(long micros) {
    return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000);
  }

  /** The sample's time of row {@code i} (make_vectors.py's {@code _at}). */
  static Instant at(int i) {
    return instant(1_704_067_200_000_000L + i * (37 * 60_000_000L + 250));
  }

  public static void main(String[] args) throws Exception {
    if (args[0].equals("--reply")) {   // decode reply files: "<file> <stat>=<value>,... <body bytes> <body format>"
      for (int i = 1; i < args.length; i++) {
        byte[] raw = java.nio.file.Files.readAllBytes(java.nio.file.Path.of(args[i]));
        try {
          Protocol.Reply r = Protocol.reply(java.nio.ByteBuffer.wrap(raw));
          List<String> kv = new ArrayList<>();
          for (int s = 0; s < r.stats().length; s++) kv.add(Protocol.STATS.get(s) + "=" + r.stats()[s]);
          System.out.println(args[i] + " " + String.join(",", kv) + " " + r.stream().remaining() + " "
              + Protocol.BODIES.get(r.body()));
        } catch (java.io.IOException e) {
          System.out.println(args[i] + " error " + e.getMessage());
        }
      }
      return;
    }
    System.out.println("const:version " + Protocol.VERSION);
    System.out.println("const:errors_in_band " + Protocol.FLAG_ERRORS_IN_BAND);
    System.out.println("const:aggregate " + Protocol.FLAG_AGGREGATE);
    System.out.println("const:top_k " + Protocol.FLAG_TOP_K);
    System.out.println("const:index " + Protocol.FLAG_INDEX);
    System.out.println("const:aggregates " + String.join(",", Protocol.AGGREGATES));
    System.out.println("const:codecs " + String.join(",", Protocol.CODECS));
    System.out.println("const:cmp_ops " + String.join(",", Protocol.CMP_OPS));
    System.out.println("const:stats " + String.join(",", Protocol.STATS));
    JsonNode vectors = new ObjectMapper().readTree(new File(args[0]));
    for (JsonNode v : vectors) {
      JsonNode p = v.get("parse");
      if (p == null) continue;
      List<String> cols = new ArrayList<>();
      p.get("columns").forEach(c -> cols.add(c.asText()));
      Protocol.Node f = p.get("filter").isNull() ? null : node(p.get("filter"));
      List<String> groupBy = new ArrayList<>();
      p.get("group_by").forEach(c -> groupBy.add(c.asText()));
      List<Protocol.Aggregate> aggs = new ArrayList<>();
      p.get("aggregates").forEach(a -> aggs.add(new Protocol.Aggregate(a.get(0).asText(),
          a.get(1).isNull() ? null : a.get(1).asText())));
      List<Protocol.SortKey> orderBy = new ArrayList<>();
      p.get("order_by").forEach(k -> orderBy.add(new Protocol.SortKey(k.get(0).asText(), k.get(1).asBoolean(),
          k.get(2).asBoolean())));
      // the aggregate and top-k flags come from their overloads: the plain one for the others
      int flags = p.get("flags").asInt() & ~(Protocol.FLAG_AGGREGATE | Protocol.FLAG_TOP_K | Protocol.FLAG_CSV);
      String codec = p.get("codec").asText();
      int batchRows = p.get("batch_rows").asInt();
      long maxReply = p.get("max_reply").asLong();
      byte[] req = !aggs.isEmpty() ? Protocol.request(cols, f, codec, batchRows, maxReply, flags, groupBy, aggs)
          : !p.get("limit").isNull() ? Protocol.request(cols, f, codec, batchRows, maxReply, flags,
              p.get("limit").asInt(), orderBy)
          : Protocol.request(cols, f, codec, batchRows, maxReply, flags);
      if (!p.get("csv").isNull()) req = Protocol.csv(req, HexFormat.of().parseHex(p.get("csv").asText()));
      long client = p.get("client").bigIntegerValue().longValue();   // a u64: above 2^63 a negative long
      if (client != 0) Protocol.client(req, client);
      System.out.println(v.get("name").asText() + " " + HexFormat.of().formatHex(req));
    }
    StructType sample = new StructType().add("id", DataTypes.LongType).add("small", DataTypes.IntegerType)
        .add("amount", DataTypes.DoubleType).add("flag", DataTypes.BooleanType).add("name", DataTypes.StringType)
        .add("ts", DataTypes.TimestampNTZType).add("ts_utc", DataTypes.TimestampType);
    Map<String, Object[]> cases = new java.util.LinkedHashMap<>();   // name -> {filter, columns, codec}
    cases.put("lt_float", new Object[] {new LessThan("amount", 10.0), List.of("id", "amount"), "none"});
    cases.put("nulls", new Object[] {new Or(new IsNull("name"), new IsNull("amount")), List.of("id", "name"), "zstd"});
    cases.put("not_null", new Object[] {new IsNotNull("amount"), List.of("id"), "none"});
    cases.put("in", new Object[] {new In("small", new Object[] {0, 3}), List.of("id", "small"), "none"});
    cases.put("string_eq", new Object[] {new EqualTo("name", "ab-1"), List.of("id"), "none"});
    // TIMESTAMP_NTZ values come as LocalDateTime, TIMESTAMP values as java.sql.Timestamp
    cases.put("timestamp_in", new Object[] {new In("ts", java.util.stream.IntStream.of(3, 9, 20)
        .mapToObj(i -> LocalDateTime.ofInstant(at(i), ZoneOffset.UTC)).toArray()), List.of("id"), "none"});
    cases.put("timestamp_range_utc", new Object[] {new And(new GreaterThanOrEqual("ts_utc", Timestamp.from(at(10))),
        new LessThan("ts_utc", Timestamp.from(at(14).plusNanos(1000)))), List.of("id", "ts_utc"), "none"});
    cases.put("float_greater_is_kept", new Object[] {new GreaterThanOrEqual("amount", 1.0), List.of(), "none"});
    cases.put("or_with_untranslatable_is_kept", new Object[] {new Or(new StringStartsWith("name", "xy"),
        new GreaterThanOrEqual("amount", 1.0)), List.of(), "none"});
    cases.put("in_with_null_is_kept", new Object[] {new In("small", new Object[] {0, null}), List.of(), "none"});
    cases.put("unknown_column_is_kept", new Object[] {new StringEndsWith("nope", "x"), List.of(), "none"});
    // more IN values than the protocol's 16-bit count (a large join's runtime filter)
    cases.put("in_too_long_is_kept", new Object[] {new In("id", java.util.stream.LongStream.range(0, 70_000).boxed()
        .toArray()), List.of(), "none"});
    // deeper than the class's depth limit, and past its node limit within it
    Filter deep = new EqualTo("id", 0L);
    for (long i = 1; i <= 70; i++) deep = new Or(deep, new EqualTo("id", i));
    cases.put("or_deeper_than_the_limit_is_kept", new Object[] {deep, List.of(), "none"});
    cases.put("more_nodes_than_the_limit_is_kept", new Object[] {balancedOr(0, 2048), List.of(), "none"});
    Class<?> translator = Class.forName("sae.connector.Filters");
    var ctor = translator.getDeclaredConstructor(StructType.class);
    ctor.setAccessible(true);
    Object filters = ctor.newInstance(sample);
    var translate = translator.getDeclaredMethod("translate", Filter.class);
    translate.setAccessible(true);
    for (var e : cases.entrySet()) {
      Protocol.Node n = (Protocol.Node) translate.invoke(filters, e.getValue()[0]);
      @SuppressWarnings("unchecked")
      List<String> cols = (List<String>) e.getValue()[1];
      System.out.println("spark:" + e.getKey() + " " + (n == null ? "kept"
          : HexFormat.of().formatHex(Protocol.request(cols, n, (String) e.getValue()[2], 0, 0, 1))));
    }
  }

  /** A balanced OR of {@code id = v} for v in [lo, hi): 11 levels for 2048 values. */
  private static Filter balancedOr(long lo, long hi) {
    if (hi - lo == 1) return new EqualTo("id", lo);
    long mid = (lo + hi) / 2;
    return new Or(balancedOr(lo, mid), balancedOr(mid, hi));
  }
}
