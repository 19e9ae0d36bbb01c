package sae.connector;

import java.lang.reflect.Field;

import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * Spark session extension (spark.sql.extensions=sae.connector.ScanStateReset) working around the
 * Spark 4.3 Python data source leaking pushed filters between queries of one DataFrame: the read
 * info (partitions + read function carrying the pushed filters) is cached on the provider-scoped
 * PythonDataSourceV2 and reused by the next scan that pushes nothing. This optimizer rule runs in
 * every query's operator-optimization batches, before the scan push-down batch, and clears that
 * cache on every not-yet-pushed Python relation, so each query plans its own read: with its own
 * pushed filters, or none. Relations already turned into scans are left alone.
 */
public final class ScanStateReset implements Function1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectOptimizerRule(session -> new ResetRule());
    return BoxedUnit.UNIT;
  }

  static final class ResetRule extends Rule<LogicalPlan> {
    private static final Field DS = dsField();

    private static Field dsField() {
      try {
        Field f = Class.forName("org.apache.spark.sql.execution.datasources.v2.python.PythonTable")
            .getDeclaredField("ds");
        f.setAccessible(true);
        return f;
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("sae.connector.ScanStateReset: this Spark has no PythonTable.ds", e);
      }
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
      plan.foreach(node -> {
        if (node instanceof DataSourceV2Relation relation
            && DS.getDeclaringClass().isInstance(relation.table())) {
          try {
            ((PythonDataSourceV2) DS.get(relation.table())).setReadInfo(null);
          } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
          }
        }
        return BoxedUnit.UNIT;
      });
      return plan;
    }
  }
}
