import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.api.java.UDF3;

/**
 * A test UDF for tests/connector/test_write.py: passes its value through, and in the first attempt
 * of partition 0 in the stage's first attempt (a stage run again after a lost executor starts its
 * tasks' attempts from 0 again), at its {@code after}-th row, fails the task ({@code fail}), stalls it until it is
 * killed ({@code straggle}: speculation's straggler) or ends the executor's JVM at once, no shutdown
 * hook run ({@code kill}: an executor lost mid-write).
 */
public final class WriteFaults implements UDF3<Long, String, Long, Long> {
  private static final Map<Long, AtomicLong> ROWS = new ConcurrentHashMap<>();

  @Override
  public Long call(Long value, String fault, Long after) throws Exception {
    TaskContext t = TaskContext.get();
    if (t.attemptNumber() != 0 || t.stageAttemptNumber() != 0 || t.partitionId() != 0) return value;
    if (ROWS.computeIfAbsent(t.taskAttemptId(), k -> new AtomicLong()).incrementAndGet() != after) return value;
    switch (fault) {
      case "fail" -> throw new IllegalStateException("sae test fault: the first attempt of partition 0 fails");
      case "straggle" -> Thread.sleep(600_000);   // until speculation's copy commits and Spark kills this attempt
      case "kill" -> Runtime.getRuntime().halt(137);
      default -> throw new IllegalArgumentException("unknown fault " + fault);
    }
    return value;
  }
}
