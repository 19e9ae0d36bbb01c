package sae.connector;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.expressions.aggregate.Sum;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A GROUP BY and aggregate functions Spark offers to push down, as the class's partial
 * aggregation (docs/protocol.md, version 3): each object's reply is its groups' partial results,
 * which Spark merges (COUNT partials are summed, SUM, MIN and MAX partials combined alike). Only
 * what the class computes exactly as Spark does is taken; otherwise {@link #translate} says why
 * and Spark aggregates the rows itself.
 */
final class Aggregates {
  /** Group key types (the protocol's; floating keys stay in Spark, which normalizes NaN and -0.0 in keys). */
  private static final Set<DataType> KEYS = ArrowTypes.spark(ProtocolSpec.GROUPED_TYPES);
  /** MIN/MAX and sort key types (the protocol's; NaN above every number, as Spark orders it). */
  private static final Set<DataType> ORDERED = ArrowTypes.spark(ProtocolSpec.ORDERED_TYPES);
  /** The type of the class's SUM of each type it sums (the protocol's). */
  private static final java.util.Map<DataType, DataType> SUMS = sums();

  private static java.util.Map<DataType, DataType> sums() {
    java.util.Map<DataType, DataType> out = new java.util.HashMap<>();
    ProtocolSpec.SUMS.forEach((in, sum) -> ArrowTypes.spark(List.of(in))
        .forEach(t -> out.put(t, ArrowTypes.spark(List.of(sum)).iterator().next())));
    return java.util.Map.copyOf(out);
  }

  /** A translated aggregation: the request's parts and the schema the replies have. */
  record Pushed(List<String> groupBy, List<Protocol.Aggregate> functions, StructType schema) implements java.io.Serializable {
    String describe() {
      return "GroupBy: " + groupBy + " Aggregates: " + functions.stream()
          .map(f -> f.fn() + "(" + (f.column() == null ? "*" : f.column()) + ")").toList();
    }
  }

  /** Why an aggregation stays in Spark. */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;

    Refused(String why) {
      super(why, null, false, false);
    }
  }

  private Aggregates() {}

  /** {@code aggregation} over {@code table} as the class's request; Refused saying what it cannot do exactly. */
  static Pushed translate(Aggregation aggregation, StructType table) throws Refused {
    List<String> groupBy = new ArrayList<>();
    List<StructField> fields = new ArrayList<>();
    for (Expression e : aggregation.groupByExpressions()) {
      StructField f = column(e, table, "GROUP BY " + e.describe());
      if (!KEYS.contains(f.dataType())) {
        throw new Refused("GROUP BY " + f.name() + ": " + f.dataType().simpleString() + " keys are grouped in Spark");
      }
      groupBy.add(f.name());
      fields.add(new StructField(f.name(), f.dataType(), true, f.metadata()));
    }
    List<Protocol.Aggregate> functions = new ArrayList<>();
    for (AggregateFunc a : aggregation.aggregateExpressions()) {
      String name = "agg" + functions.size();
      if (a instanceof CountStar) {
        functions.add(new Protocol.Aggregate("count_star", null));
        fields.add(new StructField(name, DataTypes.LongType, false, org.apache.spark.sql.types.Metadata.empty()));
        continue;
      }
      String fn;
      Expression input;
      boolean distinct = false;
      if (a instanceof Count c) {
        fn = "count";
        input = c.column();
        distinct = c.isDistinct();
      } else if (a instanceof Sum s) {
        fn = "sum";
        input = s.column();
        distinct = s.isDistinct();
      } else if (a instanceof Min m) {
        fn = "min";
        input = m.column();
      } else if (a instanceof Max m) {
        fn = "max";
        input = m.column();
      } else {
        throw new Refused(a.describe() + " is not computed in the OSD");
      }
      if (distinct) throw new Refused(a.describe() + ": DISTINCT aggregates are merged in Spark");
      StructField f = column(input, table, a.describe());
      DataType t = f.dataType();
      DataType out = switch (fn) {
        case "count" -> DataTypes.LongType;
        case "sum" -> SUMS.get(t);
        default -> ORDERED.contains(t) ? t : null;
      };
      if (out == null) throw new Refused(a.describe() + ": " + t.simpleString() + " is not summed or ordered in the OSD");
      functions.add(new Protocol.Aggregate(fn, f.name()));
      fields.add(new StructField(name, out, !fn.equals("count"), org.apache.spark.sql.types.Metadata.empty()));
    }
    return new Pushed(List.copyOf(groupBy), List.copyOf(functions), new StructType(fields.toArray(new StructField[0])));
  }

  /** Why {@code e} cannot be a sort key in the OSD (not a plain column of an ordered type), or null. */
  static String orderable(Expression e, StructType table) {
    try {
      StructField f = column(e, table, "ORDER BY " + e.describe());
      return ORDERED.contains(f.dataType()) ? null
          : "ORDER BY " + f.name() + ": " + f.dataType().simpleString() + " is not ordered in the OSD";
    } catch (Refused r) {
      return r.getMessage();
    }
  }

  private static StructField column(Expression e, StructType table, String what) throws Refused {
    if (!(e instanceof NamedReference ref) || ref.fieldNames().length != 1) {
      throw new Refused(what + ": only plain columns are aggregated in the OSD");
    }
    String name = ref.fieldNames()[0];
    for (StructField f : table.fields()) {
      if (f.name().equals(name)) return f;
    }
    throw new Refused(what + ": no column " + name);
  }
}
