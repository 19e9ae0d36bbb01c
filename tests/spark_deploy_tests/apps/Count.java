import static org.apache.spark.sql.functions.col;

import org.apache.spark.sql.SparkSession;

/** Reads a Parquet directory, keeps rows with x below a bound, prints the count. */
public class Count {
  public static void main(String[] args) {
    SparkSession spark = SparkSession.builder().appName("sae-count").getOrCreate();
    long n = spark.read().parquet(args[0]).filter(col("x").lt(Long.parseLong(args[1]))).count();
    System.out.println("COUNT " + n);
    spark.stop();
  }
}
