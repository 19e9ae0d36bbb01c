package sae.connector;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.sources.StringContains;
import org.apache.spark.sql.sources.StringEndsWith;
import org.apache.spark.sql.sources.StringStartsWith;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's pushed filters as the class's filter tree, for those the class evaluates exactly as
 * Spark does (SQL three-valued logic); null for the others, which Spark keeps.
 */
final class Filters {
  private final Map<String, DataType> types = new java.util.HashMap<>();

  Filters(StructType schema) {
    for (StructField f : schema.fields()) types.put(f.name(), f.dataType());
  }

  /** {@code f}'s tree, or null when the class would not run it exactly or it is past its size limits. */
  Protocol.Node translate(Filter f) {
    Protocol.Node n = node(f);
    return n == null || !n.fits() ? null : n;
  }

  private Protocol.Node node(Filter f) {
    if (f instanceof And a) return both(a.left(), a.right(), Protocol::and);
    if (f instanceof Or o) return both(o.left(), o.right(), Protocol::or);
    if (f instanceof Not n) {
      Protocol.Node kid = node(n.child());
      return kid == null ? null : Protocol.not(kid);
    }
    String[] refs = f.references();
    if (refs.length != 1 || !types.containsKey(refs[0])) return null;
    String col = refs[0];
    // Spark orders NaN above every number, Arrow compares it false: keep > and >= on floating
    // columns in Spark.
    boolean floating = types.get(col) == DataTypes.DoubleType || types.get(col) == DataTypes.FloatType;
    if (f instanceof IsNull) return Protocol.isNull(col);
    if (f instanceof IsNotNull) return Protocol.isNotNull(col);
    if (f instanceof EqualNullSafe e) {
      if (e.value() == null) return Protocol.isNull(col);
      if (!Protocol.encodable(e.value())) return null;
      return Protocol.and(List.of(Protocol.isNotNull(col), Protocol.cmp("==", col, e.value())));
    }
    if (f instanceof EqualTo e) return cmp("==", col, e.value());
    if (f instanceof LessThan e) return cmp("<", col, e.value());
    if (f instanceof LessThanOrEqual e) return cmp("<=", col, e.value());
    if (f instanceof GreaterThan e) return floating ? null : cmp(">", col, e.value());
    if (f instanceof GreaterThanOrEqual e) return floating ? null : cmp(">=", col, e.value());
    if (f instanceof In in) {
      List<Object> values = Arrays.asList(in.values());
      // the protocol counts IN values in 16 bits: a longer list (a large join's runtime filter) stays in Spark
      if (values.isEmpty() || values.size() > 0xFFFF || !values.stream().allMatch(Protocol::encodable)) return null;
      return Protocol.in(col, values);
    }
    if (f instanceof StringStartsWith s) return Protocol.match("starts_with", col, s.value());
    if (f instanceof StringEndsWith s) return Protocol.match("ends_with", col, s.value());
    if (f instanceof StringContains s) return Protocol.match("contains", col, s.value());
    return null;
  }

  private Protocol.Node both(Filter l, Filter r, Function<List<Protocol.Node>, Protocol.Node> join) {
    Protocol.Node a = node(l), b = node(r);
    return a == null || b == null ? null : join.apply(List.of(a, b));
  }

  private static Protocol.Node cmp(String op, String col, Object value) {
    return Protocol.encodable(value) ? Protocol.cmp(op, col, value) : null;
  }

  /** Whether the AND of {@code accepted} and {@code n} is still within the class's size limits. */
  static boolean fitsBeside(List<Protocol.Node> accepted, Protocol.Node n) {
    List<Protocol.Node> all = new ArrayList<>(accepted);
    all.add(n);
    return all(all).fits();
  }

  /** The AND of {@code nodes} (null if empty). */
  static Protocol.Node all(List<Protocol.Node> nodes) {
    return nodes.isEmpty() ? null : nodes.size() == 1 ? nodes.get(0) : Protocol.and(new ArrayList<>(nodes));
  }
}
