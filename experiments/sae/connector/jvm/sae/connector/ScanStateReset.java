package sae.connector;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import scala.runtime.BoxedUnit;

/**
 * Works around Spark 4.3's Python data source leaking pushed filters between queries of one
 * DataFrame: the read info (partitions + read function carrying the pushed filters) is cached on
 * the provider-scoped PythonDataSourceV2 and reused by the next scan that pushes nothing. This rule
 * runs in every query's operator-optimization batch, before the scan push-down batch, and clears
 * that cache on every not-yet-pushed Python relation, so each query plans its own read: with its
 * own pushed filters, or none. Relations already turned into scans are left alone.
 */
final class ScanStateReset extends Rule<LogicalPlan> {
  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    plan.foreach(node -> {
      DataSourceV2Relation relation = PythonRelations.of(node);
      if (relation != null) {
        PythonRelations.dataSource(relation).setReadInfo(null);
      }
      return BoxedUnit.UNIT;
    });
    return plan;
  }
}
