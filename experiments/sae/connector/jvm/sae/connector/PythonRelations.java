package sae.connector;

import java.lang.reflect.Field;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;

/** Access to the private state of Spark 4.3's Python data source tables (one place for reflection). */
final class PythonRelations {
  private static final Field DS = dsField();

  private PythonRelations() {}

  private static Field dsField() {
    try {
      Field f = PythonTable.class.getDeclaredField("ds");
      f.setAccessible(true);
      return f;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("sae.connector: this Spark's PythonTable has no field ds; the connector's extension is built for Spark 4.3", e);
    }
  }

  /** The relation if {@code plan} is a not-yet-pushed-down Python data source relation, else null. */
  static DataSourceV2Relation of(LogicalPlan plan) {
    return plan instanceof DataSourceV2Relation r && r.table() instanceof PythonTable ? r : null;
  }

  static PythonDataSourceV2 dataSource(DataSourceV2Relation relation) {
    try {
      return (PythonDataSourceV2) DS.get(relation.table());
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The format name the relation's source was registered under (PythonTable.name() is its short name). */
  static String shortName(DataSourceV2Relation relation) {
    return relation.table().name();
  }
}
