package sae.connector;

import org.apache.spark.sql.SparkSessionExtensions;
import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * The connector's Spark session extension ({@code spark.sql.extensions=sae.connector.SessionExtension}):
 * two optimizer rules for {@code sae-ceph} relations, which Spark 4.3's Python data source API
 * leaves out. {@link ScanStateReset} keeps pushed filters from leaking between queries of one
 * DataFrame; {@link PruneColumns} narrows each relation to the columns its query uses, so the OSDs
 * read and return only those.
 */
public final class SessionExtension implements Function1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectOptimizerRule(session -> new ScanStateReset());
    extensions.injectOptimizerRule(session -> new PruneColumns());
    return BoxedUnit.UNIT;
  }
}
