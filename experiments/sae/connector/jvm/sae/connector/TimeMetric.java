package sae.connector;

import java.util.Locale;

/** A summed time metric of the connector in ns, shown in ms (see {@link CountMetric}). */
public class TimeMetric extends CountMetric {
  public TimeMetric() {
    super();
  }

  TimeMetric(String name, String description) {
    super(name, description);
  }

  @Override
  public String aggregateTaskMetrics(long[] values) {
    long sum = 0;
    for (long v : values) sum += v;
    return String.format(Locale.ROOT, "%.1f", sum / 1e6);
  }
}
