package sae.indexed;

import java.io.Serializable;

import org.apache.spark.sql.catalyst.CatalystTypeConverters$;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Murmur3HashFunction$;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The key column of an index: where it sits in the rows and how its values are read, assigned
 * to the index's partitions (exactly as Spark's hash partitioning on that column does, so a
 * DataFrame repartitioned on it lands where the index keeps its rows) and hashed inside one.
 *
 * <p>Integral keys (byte, short, int, long, date, timestamp, timestamp_ntz) travel as a
 * {@code long}; strings (binary collation) as {@link UTF8String}.
 */
final class KeyColumn implements Serializable {
  private static final long serialVersionUID = 1L;
  /** Spark's hash partitioning: Murmur3 with this seed, then pmod by the partition count. */
  private static final int PARTITIONING_SEED = 42;
  /** Seed of the in-partition hash: any other function than the partitioning's. */
  private static final long MAP_SEED = 0x5ae1d3c0ffeeL;

  /** The rows' schema. */
  final StructType schema;
  final String name;
  final int ordinal;
  final DataType type;
  final int numPartitions;
  final boolean string;
  private final boolean wide;   // hashed as a long (else as an int)
  private final long min;
  private final long max;

  KeyColumn(StructType schema, String name, int numPartitions) {
    this.schema = schema;
    this.ordinal = schema.fieldIndex(name);
    this.name = name;
    this.type = schema.fields()[ordinal].dataType();
    this.numPartitions = numPartitions;
    this.string = type instanceof StringType;
    if (!supported(type)) {
      throw new IllegalArgumentException("createIndex: column " + name + " is " + type.simpleString()
          + "; index a column of " + SUPPORTED);
    }
    this.wide = type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType;
    this.min = type instanceof ByteType ? Byte.MIN_VALUE : type instanceof ShortType ? Short.MIN_VALUE
        : wide || string ? Long.MIN_VALUE : Integer.MIN_VALUE;
    this.max = type instanceof ByteType ? Byte.MAX_VALUE : type instanceof ShortType ? Short.MAX_VALUE
        : wide || string ? Long.MAX_VALUE : Integer.MAX_VALUE;
  }

  /** This key in rows of ``schema`` (the same types: an append may widen nullability). */
  KeyColumn withSchema(StructType schema) {
    return new KeyColumn(schema, name, numPartitions);
  }

  static final String SUPPORTED = "type byte, short, int, long, date, timestamp, timestamp_ntz or string";

  static boolean supported(DataType t) {
    return integral(t) || t instanceof DateType || t instanceof TimestampType || t instanceof TimestampNTZType
        || t instanceof StringType && ((StringType) t).supportsBinaryEquality();
  }

  static boolean integral(DataType t) {
    return t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType || t instanceof LongType;
  }

  /** Whether a column of type {@code t} can be compared with this key by value (an equi-join's
   * probe side): the same type, or any integral type against an integral key. */
  boolean comparable(DataType t) {
    return string ? t instanceof StringType && ((StringType) t).supportsBinaryEquality()
        : integral(type) ? integral(t) : t.equals(type);
  }

  /** The range of values an integral key column can hold. */
  long min() { return min; }
  long max() { return max; }

  // --- reading ---

  long longKey(InternalRow row) {
    return readLong(row, ordinal, type);
  }

  UTF8String stringKey(InternalRow row) {
    return row.getUTF8String(ordinal);
  }

  /** The value of an integral, date or timestamp field as a long. */
  static long readLong(InternalRow row, int ordinal, DataType type) {
    if (type instanceof ByteType) return row.getByte(ordinal);
    if (type instanceof ShortType) return row.getShort(ordinal);
    if (type instanceof IntegerType || type instanceof DateType) return row.getInt(ordinal);
    return row.getLong(ordinal);
  }

  // --- partitioning, as Spark's HashPartitioning(key, numPartitions) ---

  int partitionOf(long key) {
    Murmur3HashFunction$ h = Murmur3HashFunction$.MODULE$;
    return pmod((int) (wide ? h.hashLong(key, PARTITIONING_SEED) : h.hashInt((int) key, PARTITIONING_SEED)));
  }

  int partitionOf(UTF8String key) {
    return pmod((int) Murmur3HashFunction$.MODULE$.hashUnsafeBytes(key.getBaseObject(), key.getBaseOffset(),
        key.numBytes(), PARTITIONING_SEED));
  }

  /** Where a row whose key is null lands (Murmur3 of null is the seed). */
  int partitionOfNull() {
    return pmod(PARTITIONING_SEED);
  }

  private int pmod(int hash) {
    int m = hash % numPartitions;
    return m < 0 ? m + numPartitions : m;
  }

  // --- hashing inside a partition ---

  static int mapHash(long key) {   // the finalizer of SplitMix64, high half
    long z = key ^ MAP_SEED;
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return (int) ((z ^ (z >>> 31)) >>> 32);
  }

  static int mapHash(UTF8String key) {
    long h = XXH64.hashUnsafeBytes(key.getBaseObject(), key.getBaseOffset(), key.numBytes(), MAP_SEED);
    return (int) (h ^ (h >>> 32));
  }

  // --- a caller's key, to the key's internal value ---

  /**
   * The internal value of a lookup key given by a caller: a {@code Long} for integral, date and
   * timestamp keys, a {@link UTF8String} for strings; null when it equals no value of the column
   * (null, or a number outside the column's range). Numbers are taken as the internal value (days
   * for dates, microseconds for timestamps); dates and times may also be given as Java objects.
   */
  Object internal(Object value, String what) {
    if (value == null) return null;
    Object v = value instanceof Number || value instanceof String ? value
        : CatalystTypeConverters$.MODULE$.convertToCatalyst(value);
    if (string) {
      if (v instanceof UTF8String) return v;
      if (v instanceof String) return UTF8String.fromString((String) v);
    } else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
      long l = ((Number) v).longValue();
      return l < min || l > max ? null : Long.valueOf(l);
    }
    throw new IllegalArgumentException(what + ": key " + value + " (" + value.getClass().getSimpleName()
        + ") does not compare with column " + name + " of type " + type.simpleString());
  }
}
