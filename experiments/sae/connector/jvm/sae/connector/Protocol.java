package sae.connector;

import java.io.ByteArrayOutputStream;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The request of the {@code sae} class's {@code scan} method, its reply header and its error
 * frame (docs/protocol.md); the constants come from {@link ProtocolSpec}, rendered from the
 * protocol's spec. Depends on nothing but the JDK, so tests can check it against
 * tests/vectors/scan alone.
 */
public final class Protocol {
  public static final int VERSION = ProtocolSpec.VERSION;
  public static final int FLAG_ERRORS_IN_BAND = ProtocolSpec.FLAG_ERRORS_IN_BAND;
  public static final int FLAG_WHOLE_OBJECT = ProtocolSpec.FLAG_WHOLE_OBJECT;
  public static final int FLAG_INDEX = ProtocolSpec.FLAG_INDEX;
  /** An aggregate section follows the filter; {@link #request} sets it when there are aggregates. */
  public static final int FLAG_AGGREGATE = ProtocolSpec.FLAG_AGGREGATE;
  /** A top-k section follows the filter; {@link #request} with a limit sets it. */
  public static final int FLAG_TOP_K = ProtocolSpec.FLAG_TOP_K;
  /** The object is CSV and a schema section ends the request; {@link #csv} sets it. */
  public static final int FLAG_CSV = ProtocolSpec.FLAG_CSV;
  /** Aggregate functions by their code: count_star, count, sum, min, max. */
  public static final List<String> AGGREGATES = ProtocolSpec.AGGREGATES;
  /** Reply body codes: an Arrow IPC stream, or the object as stored (a Parquet file). */
  public static final List<String> BODIES = ProtocolSpec.BODIES;
  public static final int BODY_ARROW_IPC = BODIES.indexOf("arrow_ipc");
  public static final int BODY_PARQUET = BODIES.indexOf("parquet");
  public static final List<String> CODECS = ProtocolSpec.CODECS;
  public static final List<String> CMP_OPS = ProtocolSpec.CMP_OPS;
  public static final List<String> STATS = ProtocolSpec.STATS;
  private static final byte[] MAGIC = ProtocolSpec.REQUEST_MAGIC;
  private static final byte[] ERROR_MAGIC = ProtocolSpec.ERROR_MAGIC;

  private Protocol() {}

  /** An encoded filter node, the columns it reads, its height (a leaf's is 0) and its node count. */
  public static final class Node implements Serializable {
    private static final long serialVersionUID = 1L;
    final byte[] bytes;
    final Set<String> columns;
    final int height;
    final int nodes;

    private Node(byte[] bytes, Set<String> columns, int height, int nodes) {
      this.bytes = bytes;
      this.columns = columns;
      this.height = height;
      this.nodes = nodes;
    }

    /** Whether the class takes this tree as a request's filter (its depth and node limits). */
    boolean fits() {
      return height <= ProtocolSpec.MAX_FILTER_DEPTH && nodes <= ProtocolSpec.MAX_FILTER_NODES;
    }
  }

  private static final class Out extends ByteArrayOutputStream {
    final Set<String> columns = new LinkedHashSet<>();
    int height = 0;
    int nodes = 1;

    Out u8(int v) {
      write(v);
      return this;
    }

    Out u16(int v) {
      if (v < 0 || v > 0xFFFF) throw new IllegalArgumentException("value " + v + " does not fit 16 bits");
      return u8(v & 0xFF).u8(v >>> 8);
    }

    Out le(long v, int bytes) {
      for (int i = 0; i < bytes; i++) write((int) (v >>> (8 * i)) & 0xFF);
      return this;
    }

    Out text32(String s) {
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      le(b.length, 4);
      write(b, 0, b.length);
      return this;
    }

    Out name(String column) {
      byte[] b = column.getBytes(StandardCharsets.UTF_8);
      if (b.length == 0 || b.length > 0xFFFF) {
        throw new IllegalArgumentException("column name '" + column + "' must be 1..65535 bytes");
      }
      u16(b.length);
      write(b, 0, b.length);
      columns.add(column);
      return this;
    }

    Out node(Node n) {
      write(n.bytes, 0, n.bytes.length);
      columns.addAll(n.columns);
      height = Math.max(height, n.height + 1);
      nodes += n.nodes;
      return this;
    }

    Out literal(Object v) {
      if (v instanceof Boolean b) return u8(ProtocolSpec.LITERAL_BOOL).u8(b ? 1 : 0);
      if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
        return u8(ProtocolSpec.LITERAL_INT64).le(((Number) v).longValue(), 8);
      }
      if (v instanceof Double || v instanceof Float) {
        return u8(ProtocolSpec.LITERAL_FLOAT64).le(Double.doubleToRawLongBits(((Number) v).doubleValue()), 8);
      }
      if (v instanceof String s) return u8(ProtocolSpec.LITERAL_STRING).text32(s);
      if (v instanceof LocalDateTime t) {   // TIMESTAMP_NTZ: a wall-clock time
        return u8(ProtocolSpec.LITERAL_TIMESTAMP_US).le(micros(t.toInstant(ZoneOffset.UTC)), 8);
      }
      if (v instanceof Timestamp t) return u8(ProtocolSpec.LITERAL_TIMESTAMP_US_UTC).le(micros(t.toInstant()), 8);
      if (v instanceof Instant t) return u8(ProtocolSpec.LITERAL_TIMESTAMP_US_UTC).le(micros(t), 8);
      throw new IllegalArgumentException("literal " + v + " cannot be encoded");
    }

    /** Microseconds since 1970-01-01 00:00 UTC (Spark's timestamps hold no finer digits). */
    private static long micros(Instant t) {
      return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1000);
    }

    Node done() {
      return new Node(toByteArray(), Set.copyOf(columns), height, nodes);
    }
  }

  /** Whether {@link #literal} can encode {@code v} (bool, integers, finite floats, strings, timestamps). */
  public static boolean encodable(Object v) {
    if (v instanceof Double d) return Double.isFinite(d);
    if (v instanceof Float f) return Float.isFinite(f);
    return v instanceof Boolean || v instanceof Long || v instanceof Integer || v instanceof Short
        || v instanceof Byte || v instanceof String || v instanceof LocalDateTime || v instanceof Timestamp || v instanceof Instant;
  }

  public static Node and(List<Node> kids) {
    return logic(ProtocolSpec.NODE_AND, kids);
  }

  public static Node or(List<Node> kids) {
    return logic(ProtocolSpec.NODE_OR, kids);
  }

  private static Node logic(int tag, List<Node> kids) {
    if (kids.isEmpty()) throw new IllegalArgumentException("AND/OR needs at least one child");
    Out o = new Out().u8(tag).u16(kids.size());
    kids.forEach(o::node);
    return o.done();
  }

  public static Node not(Node kid) {
    return new Out().u8(ProtocolSpec.NODE_NOT).node(kid).done();
  }

  public static Node cmp(String op, String column, Object value) {
    int i = CMP_OPS.indexOf(op);
    if (i < 0) throw new IllegalArgumentException("unknown comparison " + op);
    return new Out().u8(ProtocolSpec.NODE_CMP).u8(i).name(column).literal(value).done();
  }

  public static Node isNull(String column) {
    return new Out().u8(ProtocolSpec.NODE_IS_NULL).name(column).done();
  }

  public static Node isNotNull(String column) {
    return new Out().u8(ProtocolSpec.NODE_IS_NOT_NULL).name(column).done();
  }

  public static Node in(String column, List<?> values) {
    if (values.isEmpty()) throw new IllegalArgumentException("IN needs at least one value");
    Out o = new Out().u8(ProtocolSpec.NODE_IN).name(column).u16(values.size());
    values.forEach(o::literal);
    return o.done();
  }

  /** {@code kind}: starts_with, ends_with or contains. */
  public static Node match(String kind, String column, String pattern) {
    int tag = switch (kind) {
      case "starts_with" -> ProtocolSpec.NODE_STARTS_WITH;
      case "ends_with" -> ProtocolSpec.NODE_ENDS_WITH;
      case "contains" -> ProtocolSpec.NODE_CONTAINS;
      default -> throw new IllegalArgumentException("unknown string match " + kind);
    };
    return new Out().u8(tag).name(column).text32(pattern).done();
  }

  /** One aggregate: a function of {@link #AGGREGATES} and its column (null for count_star). */
  public record Aggregate(String fn, String column) implements Serializable {
    public Aggregate {
      if (!AGGREGATES.contains(fn)) throw new IllegalArgumentException("unknown aggregate function " + fn);
      if ((column == null) != fn.equals("count_star")) {
        throw new IllegalArgumentException(fn + " takes " + (column == null ? "a column" : "no column"));
      }
    }
  }

  /** The request bytes; {@code columns} empty = every column, {@code filter} null = none. */
  public static byte[] request(List<String> columns, Node filter, String codec, int batchRows, long maxReply,
      int flags) {
    return request(columns, filter, codec, batchRows, maxReply, flags, List.of(), List.of());
  }

  /**
   * The request bytes; with {@code aggregates} (this sets {@link #FLAG_AGGREGATE}) the kept rows
   * grouped by {@code groupBy} and aggregated instead of projected: {@code columns} must then be
   * empty and {@link #FLAG_WHOLE_OBJECT} off.
   */
  public static byte[] request(List<String> columns, Node filter, String codec, int batchRows, long maxReply,
      int flags, List<String> groupBy, List<Aggregate> aggregates) {
    if (!aggregates.isEmpty()) flags |= FLAG_AGGREGATE;
    boolean aggregate = (flags & FLAG_AGGREGATE) != 0;
    if (aggregate ? aggregates.isEmpty() || aggregates.size() > ProtocolSpec.MAX_AGGREGATES
        || groupBy.size() > ProtocolSpec.MAX_GROUP_COLUMNS || !columns.isEmpty() || (flags & FLAG_WHOLE_OBJECT) != 0
        : !groupBy.isEmpty()) {
      throw new IllegalArgumentException("an aggregate request has 1.." + ProtocolSpec.MAX_AGGREGATES
          + " aggregates and at most " + ProtocolSpec.MAX_GROUP_COLUMNS + " group columns, names no columns and "
          + "does not take whole objects");
    }
    Out o = head(columns, filter, codec, batchRows, maxReply, flags);
    if (aggregate) {
      o.u16(groupBy.size());
      groupBy.forEach(o::name);
      o.u16(aggregates.size());
      for (Aggregate a : aggregates) {
        o.u8(AGGREGATES.indexOf(a.fn()));
        if (a.column() != null) o.name(a.column());
      }
    }
    return o.toByteArray();
  }

  /** One sort key of a top-k request: a column, descending or ascending, NULLs first or last. */
  public record SortKey(String column, boolean descending, boolean nullsFirst) implements Serializable {}

  /**
   * The request bytes of a top-k request (this sets {@link #FLAG_TOP_K}): of the rows that pass
   * {@code filter}, the first {@code limit} (1..2^24) by {@code orderBy} plus every row that ties
   * with the limit-th on all keys, or without sort keys the first {@code limit} in file order;
   * {@code columns} as in a plain request (sort keys need not be among them), {@link
   * #FLAG_AGGREGATE} and {@link #FLAG_WHOLE_OBJECT} off.
   */
  public static byte[] request(List<String> columns, Node filter, String codec, int batchRows, long maxReply,
      int flags, int limit, List<SortKey> orderBy) {
    flags |= FLAG_TOP_K;
    if (limit < 1 || limit > ProtocolSpec.MAX_LIMIT || orderBy.size() > ProtocolSpec.MAX_SORT_KEYS
        || (flags & (FLAG_AGGREGATE | FLAG_WHOLE_OBJECT)) != 0) {
      throw new IllegalArgumentException("a top-k request has a limit in 1.." + ProtocolSpec.MAX_LIMIT + " and at most "
          + ProtocolSpec.MAX_SORT_KEYS + " sort keys, and is neither an aggregate nor takes whole objects");
    }
    Out o = head(columns, filter, codec, batchRows, maxReply, flags);
    o.le(limit, 4).u16(orderBy.size());
    for (SortKey k : orderBy) {
      o.name(k.column()).u8((k.descending() ? ProtocolSpec.KEY_DESCENDING : 0)
          | (k.nullsFirst() ? ProtocolSpec.KEY_NULLS_FIRST : 0));
    }
    return o.toByteArray();
  }

  /**
   * {@code request} (any of the above) for a CSV object whose columns, by position, are those of
   * {@code schema}: the {@link #FLAG_CSV} flag set and the schema section, {@code u32} length and
   * the schema as an Arrow IPC message ({@link #schemaMessage}), appended (it ends every request).
   */
  public static byte[] csv(byte[] request, byte[] schema) {
    Out o = new Out();
    o.write(request, 0, request.length);
    o.le(schema.length, 4);
    o.write(schema, 0, schema.length);
    byte[] b = o.toByteArray();
    b[6] |= (byte) FLAG_CSV;   // the flags' low byte
    return b;
  }

  /** Offset of the request's client field (u64). */
  private static final int CLIENT_OFFSET = 24;

  /**
   * {@code request} (any of the above) asked for {@code client}: one query's calls share it, so
   * each reply says how many of its client's calls the OSD ran beside it ({@code own_calls_ns}).
   * Sets the client field in place and returns {@code request}.
   */
  public static byte[] client(byte[] request, long client) {
    for (int i = 0; i < 8; i++) request[CLIENT_OFFSET + i] = (byte) (client >>> (8 * i));
    return request;
  }

  /** {@code schema} as an Arrow IPC schema message: the csv section's schema. */
  public static byte[] schemaMessage(org.apache.arrow.vector.types.pojo.Schema schema) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try {
      org.apache.arrow.vector.ipc.message.MessageSerializer.serialize(
          new org.apache.arrow.vector.ipc.WriteChannel(java.nio.channels.Channels.newChannel(bytes)), schema);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);   // a ByteArrayOutputStream does not fail
    }
    return bytes.toByteArray();
  }

  /** Header (client 0: {@link #client} sets it), projection and filter: what every request starts with. */
  private static Out head(List<String> columns, Node filter, String codec, int batchRows, long maxReply, int flags) {
    int c = CODECS.indexOf(codec);
    if (c < 0) throw new IllegalArgumentException("codec " + codec + " is not one of " + CODECS);
    Out o = new Out();
    o.write(MAGIC, 0, 4);
    o.u16(VERSION).u16(flags).u8(c).le(0, 3).le(batchRows, 4).le(maxReply, 8).le(0, 8).u16(columns.size());
    columns.forEach(o::name);
    byte[] f = filter == null ? new byte[0] : filter.bytes;
    o.le(f.length, 4);
    o.write(f, 0, f.length);
    return o;
  }

  /** The class's error in {@code reply} (error frame), or null if the reply is a result. */
  public static ScanException error(ByteBuffer reply) {
    ByteBuffer b = reply.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    if (b.remaining() < 12 || !startsWith(b, ERROR_MAGIC)) return null;
    int code = b.getInt(b.position() + 4);
    int n = Math.min(b.getInt(b.position() + 8), b.remaining() - 12);
    byte[] msg = new byte[Math.max(0, n)];
    b.position(b.position() + 12);
    b.get(msg);
    return new ScanException(code, new String(msg, StandardCharsets.UTF_8));
  }

  private static boolean startsWith(ByteBuffer b, byte[] magic) {
    for (int i = 0; i < magic.length; i++) {
      if (b.get(b.position() + i) != magic[i]) return false;
    }
    return true;
  }

  /**
   * A successful reply: the call's stats (in {@link #STATS} order), its body and the body's format
   * ({@link #BODY_ARROW_IPC} or {@link #BODY_PARQUET}).
   */
  public record Reply(long[] stats, ByteBuffer stream, int body) {}

  /**
   * Splits a successful {@code reply} (not an error frame) into stats and stream; a reply without
   * the reply magic comes from a class of an older protocol: an IOException saying so.
   */
  public static Reply reply(ByteBuffer reply) throws java.io.IOException {
    ByteBuffer b = reply.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int n = b.remaining() >= 8 && startsWith(b, ProtocolSpec.REPLY_MAGIC) ? b.getShort(b.position() + 4) & 0xFFFF : -1;
    int body = n < 0 ? -1 : b.getShort(b.position() + 6) & 0xFFFF;
    if (n < STATS.size() || b.remaining() < 8 + 8 * n || body >= ProtocolSpec.BODIES.size()) {
      throw new java.io.IOException("the reply does not carry protocol " + VERSION + " stats: the OSDs run an older "
          + "sae class; reinstall it (rados_deploy install_class)");
    }
    long[] stats = new long[STATS.size()];
    for (int i = 0; i < stats.length; i++) stats[i] = b.getLong(b.position() + 8 + 8 * i);
    b.position(b.position() + 8 + 8 * n);
    return new Reply(stats, b.slice(), body);
  }

  /** A scan the class refused or failed: errno plus the class's one-line message. */
  public static final class ScanException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    public final int errno;

    public ScanException(int errno, String message) {
      super("errno " + errno + ": " + message);
      this.errno = errno;
    }
  }
}
