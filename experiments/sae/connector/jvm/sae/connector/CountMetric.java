package sae.connector;

import org.apache.spark.sql.connector.metric.CustomSumMetric;

/**
 * A summed count or byte metric of the connector ({@link ScanMetrics}). Spark's UI re-creates the
 * class by its name with the no-argument constructor to aggregate task values, so it is
 * top-level and public.
 */
public class CountMetric extends CustomSumMetric {
  private final String name;
  private final String description;

  public CountMetric() {
    this("", "");
  }

  CountMetric(String name, String description) {
    this.name = name;
    this.description = description;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String description() {
    return description;
  }
}
