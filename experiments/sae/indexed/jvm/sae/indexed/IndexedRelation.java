package sae.indexed;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.PartitionPruningRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.sources.PrunedFilteredScan;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * An index version as a Spark relation (a data source V1 scan): filters on the key that Spark
 * pushes down (=, <=> a value, IN, AND and OR of them) pick the partitions and rows through the
 * key maps; any other scan reads every row. Spark still applies every filter to what the scan
 * returns, so the answer is exact whatever is pushed.
 */
final class IndexedRelation extends BaseRelation implements PrunedFilteredScan {
  private final IndexedFrame frame;

  IndexedRelation(IndexedFrame frame) {
    this.frame = frame;
  }

  @Override
  public SQLContext sqlContext() {
    return frame.session().sqlContext();
  }

  @Override
  public StructType schema() {
    return frame.schema();
  }

  @Override
  public long sizeInBytes() {
    return frame.memory().rowBytes();
  }

  /** The scan returns internal rows (see {@link #buildScan}). */
  @Override
  public boolean needConversion() {
    return false;
  }

  @Override
  public Filter[] unhandledFilters(Filter[] filters) {
    return filters;
  }

  @Override
  public RDD<Row> buildScan(String[] requiredColumns, Filter[] filters) {
    KeyColumn key = frame.key();
    int[] ordinals = new int[requiredColumns.length];
    for (int i = 0; i < ordinals.length; i++) ordinals[i] = key.schema.fieldIndex(requiredColumns[i]);
    StructType schema = key.schema;
    Set<Object> keys = keys(filters, key);
    JavaRDD<IndexedPartition> parts = frame.partitions();
    JavaRDD<InternalRow> rows;
    if (keys == null) {
      rows = parts.mapPartitions(it -> project(it.next().scan(), ordinals, schema));
    } else {
      Object[][] byPartition = frame.byPartition(keys, "filter");
      boolean[] keep = new boolean[byPartition.length];
      for (int p : IndexedFrame.touched(byPartition)) keep[p] = true;
      JavaRDD<IndexedPartition> pruned = PartitionPruningRDD.create(parts.rdd(), new Kept(keep)).toJavaRDD();
      rows = pruned.mapPartitions(it -> {
        IndexedPartition p = it.next();
        return project(p.lookup(byPartition[p.id]), ordinals, schema);
      });
    }
    @SuppressWarnings({"unchecked", "rawtypes"})
    RDD<Row> out = (RDD) rows.rdd();   // needConversion() is false: Spark takes these as InternalRows
    return out;
  }

  /** ``rows`` with just the fields at ``ordinals`` of ``schema`` (a projection of its own per task). */
  private static Iterator<InternalRow> project(Iterator<UnsafeRow> rows, int[] ordinals, StructType schema) {
    List<Expression> fields = new ArrayList<>();
    for (int o : ordinals) {
      StructField f = schema.fields()[o];
      fields.add(new BoundReference(o, f.dataType(), f.nullable()));
    }
    UnsafeProjection projection = UnsafeProjection.create(CollectionConverters.asScala(fields).toSeq());
    return new Iterator<InternalRow>() {
      @Override
      public boolean hasNext() {
        return rows.hasNext();
      }

      @Override
      public InternalRow next() {
        return projection.apply(rows.next());
      }
    };
  }

  /** The keys ``filters`` (all of which hold) allow, or null when they allow any key. */
  static Set<Object> keys(Filter[] filters, KeyColumn key) {
    Set<Object> out = null;
    for (Filter f : filters) out = intersect(out, keys(f, key));
    return out;
  }

  private static Set<Object> keys(Filter f, KeyColumn key) {
    if (f instanceof And) return intersect(keys(((And) f).left(), key), keys(((And) f).right(), key));
    if (f instanceof Or) {
      Set<Object> l = keys(((Or) f).left(), key), r = keys(((Or) f).right(), key);
      if (l == null || r == null) return null;
      l.addAll(r);
      return l;
    }
    String attribute;
    Object[] values;
    if (f instanceof EqualTo) {
      attribute = ((EqualTo) f).attribute();
      values = new Object[] {((EqualTo) f).value()};
    } else if (f instanceof EqualNullSafe && ((EqualNullSafe) f).value() != null) {
      attribute = ((EqualNullSafe) f).attribute();
      values = new Object[] {((EqualNullSafe) f).value()};
    } else if (f instanceof In) {
      attribute = ((In) f).attribute();
      values = ((In) f).values();
    } else {
      return null;
    }
    if (!attribute.equals(key.name) && !attribute.equals("`" + key.name.replace("`", "``") + "`")) return null;
    Set<Object> out = new LinkedHashSet<>();
    for (Object v : values) {
      try {
        Object internal = key.internal(v, "filter");
        if (internal != null) out.add(internal);
      } catch (IllegalArgumentException e) {
        return null;   // a value of another type: let Spark's filter decide
      }
    }
    return out;
  }

  private static Set<Object> intersect(Set<Object> a, Set<Object> b) {
    if (a == null) return b;
    if (b == null) return a;
    a.retainAll(b);
    return a;
  }

  /** Whether a partition is kept (a Scala function: PartitionPruningRDD takes one). */
  private static final class Kept extends AbstractFunction1<Object, Object> implements Serializable {
    private static final long serialVersionUID = 1L;
    private final boolean[] keep;

    Kept(boolean[] keep) {
      this.keep = keep;
    }

    @Override
    public Object apply(Object partition) {
      return keep[(Integer) partition];
    }
  }
}
