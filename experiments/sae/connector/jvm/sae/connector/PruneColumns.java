package sae.connector;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Function1;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * Column pruning for {@code sae-ceph} relations. Spark 4.3's PythonScanBuilder does not implement
 * SupportsPushDownRequiredColumns, so a Python source always produces its whole schema. This rule
 * matches what Spark's own scan push-down matches, {@code Project [Filter] relation} (Spark's
 * ColumnPruning puts such a Project above every relation whose columns are not all used), and
 * replaces the relation with one whose table has only the referenced columns, keeping the
 * attributes' ids. The Python reader then receives that schema and the OSDs read and return only
 * those columns. A query that uses no column (count(*)) keeps the narrowest one, since the scan
 * protocol reads an empty column list as "all columns".
 */
final class PruneColumns extends Rule<LogicalPlan> {
  static final String FORMAT = "sae-ceph";

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return (LogicalPlan) plan.transformDown(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
      @Override
      public boolean isDefinedAt(LogicalPlan node) {
        return prune(node) != null;
      }

      @Override
      public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, Function1<A1, B1> otherwise) {
        LogicalPlan pruned = prune(node);
        @SuppressWarnings("unchecked")
        B1 out = pruned != null ? (B1) pruned : otherwise.apply(node);
        return out;
      }
    });
  }

  /** {@code node} with its sae-ceph relation narrowed, or null if there is nothing to prune. */
  private static LogicalPlan prune(LogicalPlan node) {
    if (!(node instanceof Project project)) {
      return null;
    }
    Filter filter = project.child() instanceof Filter f ? f : null;
    DataSourceV2Relation relation = PythonRelations.of(filter != null ? filter.child() : project.child());
    if (relation == null || !FORMAT.equals(PythonRelations.shortName(relation))) {
      return null;
    }
    AttributeSet used = filter != null ? project.references().$plus$plus(filter.references()) : project.references();
    List<AttributeReference> all = CollectionConverters.asJava(relation.output());
    List<AttributeReference> kept = new ArrayList<>();
    for (AttributeReference a : all) {
      if (used.contains(a)) {
        kept.add(a);
      }
    }
    if (kept.isEmpty()) {
      kept.add(all.stream().min(Comparator.comparingInt(a -> a.dataType().defaultSize())).orElseThrow());
    }
    if (kept.size() == all.size()) {
      return null;
    }
    StructType schema = relation.schema();
    StructField[] fields = kept.stream().map(a -> schema.apply(a.name())).toArray(StructField[]::new);
    PythonTable table = new PythonTable(PythonRelations.dataSource(relation), PythonRelations.shortName(relation),
        new StructType(fields));
    DataSourceV2Relation narrowed = relation.copy(table, CollectionConverters.asScala(kept).toList(),
        relation.catalog(), relation.identifier(), relation.options(), relation.timeTravelSpec());
    LogicalPlan child = filter != null ? filter.copy(filter.condition(), narrowed) : narrowed;
    return project.copy(project.projectList(), child);
  }
}
