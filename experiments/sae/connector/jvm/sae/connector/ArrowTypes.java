package sae.connector;

import org.apache.arrow.vector.compression.CompressionCodec;
import org.apache.arrow.vector.compression.NoCompressionCodec;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The Spark type of each Arrow type the OSD returns, restricted to the vectors Spark's
 * {@code ArrowColumnVector} reads with the accessor that type asks for (so the schema Spark plans
 * with and the vectors it reads agree exactly).
 */
final class ArrowTypes {
  private ArrowTypes() {}

  /** Arrow's LZ4 and ZSTD codecs where Spark ships Arrow's compression module (Spark 4.1 and later
   * do; 4.0 and 3.5 do not: their replies must then be uncompressed, which {@link Options} checks),
   * else none. */
  static final CompressionCodec.Factory CODECS = codecs();

  static boolean compressedReplies() {
    return CODECS != NoCompressionCodec.Factory.INSTANCE;
  }

  private static CompressionCodec.Factory codecs() {
    try {   // by name: the connector compiles against Spark's jars with or without the module
      return (CompressionCodec.Factory) Class.forName("org.apache.arrow.compression.CommonsCompressionFactory")
          .getField("INSTANCE").get(null);
    } catch (ReflectiveOperationException e) {
      return NoCompressionCodec.Factory.INSTANCE;
    }
  }

  /**
   * The Spark types of the Arrow types named as Arrow C++ names them (the protocol's type lists,
   * {@link ProtocolSpec#ORDERED_TYPES}): the types {@link #toSpark(Field, String)} reads them as.
   * Unsigned integers have none (Spark has no unsigned types).
   */
  static java.util.Set<DataType> spark(java.util.Collection<String> arrowTypes) {
    java.util.Set<DataType> out = new java.util.HashSet<>();
    for (String t : arrowTypes) {
      out.addAll(switch (t) {
        case "INT8" -> java.util.List.of(DataTypes.ByteType);
        case "INT16" -> java.util.List.of(DataTypes.ShortType);
        case "INT32" -> java.util.List.of(DataTypes.IntegerType);
        case "INT64" -> java.util.List.of(DataTypes.LongType);
        case "FLOAT" -> java.util.List.of(DataTypes.FloatType);
        case "DOUBLE" -> java.util.List.of(DataTypes.DoubleType);
        case "BOOL" -> java.util.List.of(DataTypes.BooleanType);
        case "STRING", "LARGE_STRING" -> java.util.List.of(DataTypes.StringType);
        case "DATE32" -> java.util.List.of(DataTypes.DateType);
        case "TIMESTAMP" -> java.util.List.of(DataTypes.TimestampType, DataTypes.TimestampNTZType);
        default -> java.util.List.<DataType>of();
      });
    }
    return java.util.Set.copyOf(out);
  }

  /**
   * The Arrow schema of a CSV file whose columns are {@code schema}'s (what the class parses each
   * column as): the inverse of {@link #toSpark(Field, String)}; a TIMESTAMP (with local time zone)
   * column is UTC, so its text needs a zone offset.
   */
  static Schema toArrow(StructType schema) {
    java.util.List<Field> fields = new java.util.ArrayList<>();
    for (StructField f : schema.fields()) {
      DataType d = f.dataType();
      ArrowType t = d.equals(DataTypes.BooleanType) ? ArrowType.Bool.INSTANCE
          : d.equals(DataTypes.ByteType) ? new ArrowType.Int(8, true)
          : d.equals(DataTypes.ShortType) ? new ArrowType.Int(16, true)
          : d.equals(DataTypes.IntegerType) ? new ArrowType.Int(32, true)
          : d.equals(DataTypes.LongType) ? new ArrowType.Int(64, true)
          : d.equals(DataTypes.FloatType) ? new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)
          : d.equals(DataTypes.DoubleType) ? new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)
          : d.equals(DataTypes.StringType) ? ArrowType.Utf8.INSTANCE
          : d.equals(DataTypes.DateType) ? new ArrowType.Date(DateUnit.DAY)
          : d.equals(DataTypes.TimestampNTZType) ? new ArrowType.Timestamp(TimeUnit.MICROSECOND, null)
          : d.equals(DataTypes.TimestampType) ? new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC")
          : d instanceof org.apache.spark.sql.types.DecimalType dec ? new ArrowType.Decimal(dec.precision(), dec.scale(), 128)
          : null;
      if (t == null) {
        throw new IllegalArgumentException("[" + Native.host() + " sae-ceph] schema column " + f.name() + " is "
            + d.simpleString() + ", which the class cannot parse from CSV; give boolean, integer, float, double, "
            + "string, date, timestamp, timestamp_ntz or decimal columns");
      }
      fields.add(new Field(f.name(), new org.apache.arrow.vector.types.pojo.FieldType(f.nullable(), t, null), null));
    }
    return new Schema(fields);
  }

  /** The Spark types {@link #toSpark(Field, String)} reads back from what Spark writes as Parquet (decimals too). */
  private static final java.util.Set<DataType> READ_BACK = java.util.Set.of(DataTypes.BooleanType, DataTypes.ByteType,
      DataTypes.ShortType, DataTypes.IntegerType, DataTypes.LongType, DataTypes.FloatType, DataTypes.DoubleType,
      DataTypes.StringType, DataTypes.BinaryType, DataTypes.DateType, DataTypes.TimestampType,
      DataTypes.TimestampNTZType, DataTypes.NullType);

  /** Whether a column of type {@code d} written as Parquet reads back through the connector. */
  static boolean readsBack(DataType d) {
    return d instanceof org.apache.spark.sql.types.DecimalType || READ_BACK.contains(d);
  }

  static StructType toSpark(Schema schema, String where) {
    StructField[] fields = schema.getFields().stream()
        .map(f -> new StructField(f.getName(), toSpark(f, where), f.isNullable(), Metadata.empty()))
        .toArray(StructField[]::new);
    return new StructType(fields);
  }

  static DataType toSpark(Field f, String where) {
    ArrowType t = f.getType();
    DataType d = switch (t.getTypeID()) {
      case Bool -> DataTypes.BooleanType;
      case Int -> {
        ArrowType.Int i = (ArrowType.Int) t;
        if (!i.getIsSigned()) yield null;
        yield switch (i.getBitWidth()) {
          case 8 -> DataTypes.ByteType;
          case 16 -> DataTypes.ShortType;
          case 32 -> DataTypes.IntegerType;
          case 64 -> DataTypes.LongType;
          default -> null;
        };
      }
      case FloatingPoint -> {
        FloatingPointPrecision p = ((ArrowType.FloatingPoint) t).getPrecision();
        yield p == FloatingPointPrecision.SINGLE ? DataTypes.FloatType
            : p == FloatingPointPrecision.DOUBLE ? DataTypes.DoubleType : null;
      }
      case Utf8, LargeUtf8 -> DataTypes.StringType;
      case Binary, LargeBinary -> DataTypes.BinaryType;
      case Decimal -> {
        ArrowType.Decimal dec = (ArrowType.Decimal) t;
        yield dec.getBitWidth() == 128 ? DataTypes.createDecimalType(dec.getPrecision(), dec.getScale()) : null;
      }
      case Date -> ((ArrowType.Date) t).getUnit() == DateUnit.DAY ? DataTypes.DateType : null;
      case Timestamp -> {
        ArrowType.Timestamp ts = (ArrowType.Timestamp) t;
        if (ts.getUnit() != TimeUnit.MICROSECOND) yield null;
        yield ts.getTimezone() == null ? DataTypes.TimestampNTZType : DataTypes.TimestampType;
      }
      case Null -> DataTypes.NullType;
      default -> null;
    };
    if (d == null) {
      throw new IllegalArgumentException("[" + Native.host() + " sae-ceph] column " + f.getName() + " of " + where
          + " has Arrow type " + t + ", which Spark's ArrowColumnVector cannot read; rewrite the data with "
          + "supported types (signed integers, float/double, string, binary, decimal128, date32, timestamp[us])");
    }
    return d;
  }
}
