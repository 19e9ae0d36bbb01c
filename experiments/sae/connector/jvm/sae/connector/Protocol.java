package sae.connector;

import java.io.ByteArrayOutputStream;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The request of the {@code sae} class's {@code scan} method and its error frame
 * (docs/protocol.md, version 1). Depends on nothing but the JDK, so tests can check it against
 * tests/vectors/scan alone.
 */
public final class Protocol {
  public static final int VERSION = 1;
  public static final int FLAG_ERRORS_IN_BAND = 1;
  public static final List<String> CODECS = List.of("none", "lz4", "zstd");
  public static final List<String> CMP_OPS = List.of("==", "!=", "<", "<=", ">", ">=");
  private static final byte[] MAGIC = {'S', 'A', 'E', 'Q'};
  private static final byte[] ERROR_MAGIC = {'S', 'A', 'E', 'E'};

  private Protocol() {}

  /** An encoded filter node and the columns it reads. */
  public static final class Node implements Serializable {
    private static final long serialVersionUID = 1L;
    final byte[] bytes;
    final Set<String> columns;

    private Node(byte[] bytes, Set<String> columns) {
      this.bytes = bytes;
      this.columns = columns;
    }
  }

  private static final class Out extends ByteArrayOutputStream {
    final Set<String> columns = new LinkedHashSet<>();

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
      return this;
    }

    Out literal(Object v) {
      if (v instanceof Boolean b) return u8(1).u8(b ? 1 : 0);
      if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
        return u8(2).le(((Number) v).longValue(), 8);
      }
      if (v instanceof Double || v instanceof Float) {
        return u8(3).le(Double.doubleToRawLongBits(((Number) v).doubleValue()), 8);
      }
      if (v instanceof String s) return u8(4).text32(s);
      throw new IllegalArgumentException("literal " + v + " cannot be encoded");
    }

    Node done() {
      return new Node(toByteArray(), Set.copyOf(columns));
    }
  }

  /** Whether {@link #literal} can encode {@code v} (bool, integers, finite floats, strings). */
  public static boolean encodable(Object v) {
    if (v instanceof Double d) return Double.isFinite(d);
    if (v instanceof Float f) return Float.isFinite(f);
    return v instanceof Boolean || v instanceof Long || v instanceof Integer || v instanceof Short
        || v instanceof Byte || v instanceof String;
  }

  public static Node and(List<Node> kids) {
    return logic(0x01, kids);
  }

  public static Node or(List<Node> kids) {
    return logic(0x02, kids);
  }

  private static Node logic(int tag, List<Node> kids) {
    if (kids.isEmpty()) throw new IllegalArgumentException("AND/OR needs at least one child");
    Out o = new Out().u8(tag).u16(kids.size());
    kids.forEach(o::node);
    return o.done();
  }

  public static Node not(Node kid) {
    return new Out().u8(0x03).node(kid).done();
  }

  public static Node cmp(String op, String column, Object value) {
    int i = CMP_OPS.indexOf(op);
    if (i < 0) throw new IllegalArgumentException("unknown comparison " + op);
    return new Out().u8(0x10).u8(i).name(column).literal(value).done();
  }

  public static Node isNull(String column) {
    return new Out().u8(0x11).name(column).done();
  }

  public static Node isNotNull(String column) {
    return new Out().u8(0x12).name(column).done();
  }

  public static Node in(String column, List<?> values) {
    if (values.isEmpty()) throw new IllegalArgumentException("IN needs at least one value");
    Out o = new Out().u8(0x13).name(column).u16(values.size());
    values.forEach(o::literal);
    return o.done();
  }

  /** {@code kind}: starts_with, ends_with or contains. */
  public static Node match(String kind, String column, String pattern) {
    int tag = switch (kind) {
      case "starts_with" -> 0x14;
      case "ends_with" -> 0x15;
      case "contains" -> 0x16;
      default -> throw new IllegalArgumentException("unknown string match " + kind);
    };
    return new Out().u8(tag).name(column).text32(pattern).done();
  }

  /** The request bytes; {@code columns} empty = every column, {@code filter} null = none. */
  public static byte[] request(List<String> columns, Node filter, String codec, int batchRows, long maxReply,
      int flags) {
    int c = CODECS.indexOf(codec);
    if (c < 0) throw new IllegalArgumentException("codec " + codec + " is not one of " + CODECS);
    Out o = new Out();
    o.write(MAGIC, 0, 4);
    o.u16(VERSION).u16(flags).u8(c).le(0, 3).le(batchRows, 4).le(maxReply, 8).u16(columns.size());
    columns.forEach(o::name);
    byte[] f = filter == null ? new byte[0] : filter.bytes;
    o.le(f.length, 4);
    o.write(f, 0, f.length);
    return o.toByteArray();
  }

  /** The class's error in {@code reply} ("SAEE" frame), or null if the reply is a result stream. */
  public static ScanException error(ByteBuffer reply) {
    ByteBuffer b = reply.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    if (b.remaining() < 12) return null;
    for (int i = 0; i < 4; i++) {
      if (b.get(b.position() + i) != ERROR_MAGIC[i]) return null;
    }
    int code = b.getInt(b.position() + 4);
    int n = Math.min(b.getInt(b.position() + 8), b.remaining() - 12);
    byte[] msg = new byte[Math.max(0, n)];
    b.position(b.position() + 12);
    b.get(msg);
    return new ScanException(code, new String(msg, StandardCharsets.UTF_8));
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
