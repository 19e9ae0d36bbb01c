package sae.connector;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.util.LongAccumulator;

/**
 * Mode auto's tasks' word to the driver on the storage side's CPU, per query shape: of the last
 * query's tasks whose cost model could tell, how many found the storage side short of CPU for the
 * class's calls ({@link Pushback#shortOfCpu}). Spark accumulators bring it back with the tasks'
 * results; the driver plans the next query of the shape by it ({@link SaeScan}).
 */
final class CpuVerdict implements Serializable {
  private static final long serialVersionUID = 1L;
  /** Shapes remembered on the driver. */
  private static final int SHAPES = 64;
  private static final Map<String, CpuVerdict> LAST = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, CpuVerdict> eldest) {
      return size() > SHAPES;
    }
  };
  private final LongAccumulator told = new LongAccumulator();
  private final LongAccumulator shortOfCpu = new LongAccumulator();

  private CpuVerdict() {}

  /** A new verdict for a query of {@code shape}, registered with {@code sc} and remembered as the shape's last. */
  static CpuVerdict open(SparkContext sc, String shape) {
    CpuVerdict v = new CpuVerdict();
    sc.register(v.told, "sae-ceph auto tasks that judged the storage side's CPU");
    sc.register(v.shortOfCpu, "sae-ceph auto tasks that found the storage side short of CPU");
    synchronized (LAST) {
      LAST.put(shape, v);
    }
    return v;
  }

  /** Whether the last query of {@code shape} found CPU enough on the storage side: some of its tasks could tell, none found it short. */
  static boolean enough(String shape) {
    CpuVerdict v;
    synchronized (LAST) {
      v = LAST.get(shape);
    }
    return v != null && v.told.sum() > 0 && v.shortOfCpu.sum() == 0;
  }

  /** A task's word, on the executor: {@code shortOfCpu} null when its model cannot tell yet (no word). */
  void tell(Boolean shortOfCpu) {
    if (shortOfCpu == null) return;
    told.add(1);
    if (shortOfCpu) this.shortOfCpu.add(1);
  }
}
