package indexedtests;

import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.SparkEnv;
import org.apache.spark.storage.RDDBlockId;

/** What an executor's loss takes, done in a local-mode application (whose one executor is the
 * driver): a cached partition, and shuffle output. Py4J cannot call SparkEnv's methods itself. */
public final class Faults {
  private Faults() {}

  /** Whether partition ``partition`` of RDD ``rdd`` is cached here. */
  public static boolean cached(int rdd, int partition) {
    return SparkEnv.get().blockManager().getStatus(new RDDBlockId(rdd, partition)).isDefined();
  }

  /** Drop that cached partition, telling the driver's block master. */
  public static void drop(int rdd, int partition) {
    SparkEnv.get().blockManager().removeBlock(new RDDBlockId(rdd, partition), true);
  }

  /** Forget every map output of shuffle ``shuffle``: the next job that reads it runs its map stage again. */
  public static void loseShuffle(int shuffle) {
    ((MapOutputTrackerMaster) SparkEnv.get().mapOutputTracker()).unregisterAllMapAndMergeOutput(shuffle);
  }
}
