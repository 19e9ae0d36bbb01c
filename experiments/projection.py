"""Projection width (Arrow-Spark paper, E5): query time and bytes to the compute side when the
query reads 1 to all 19 columns, offloaded (the OSDs return only those columns) against vanilla
Spark Parquet, every row kept."""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning.readers import OFFLOAD, VANILLA, names

READERS = names(OFFLOAD, VANILLA)
ONE, FOUR = ("VendorID",), ("VendorID", "passenger_count", "trip_distance", "fare_amount")
EIGHT = FOUR + ("PULocationID", "DOLocationID", "payment_type", "tip_amount")
SIXTEEN = EIGHT + ("tpep_pickup_datetime", "tpep_dropoff_datetime", "RatecodeID", "store_and_fwd_flag",
                   "extra", "mta_tax", "tolls_amount", "improvement_surcharge")
ALL = ()   # every column

experiment = Experiment(
    name="projection",
    figures=("projection",),
    description="Query time and compute-side bytes vs the columns a query reads, offload vs vanilla, "
                "100 % of rows (Arrow-Spark paper E5)",
    workload=Workload(selectivity=100),
    sweep=Sweep(cartesian={"columns": [ONE, FOUR, EIGHT, SIXTEEN, ALL], "reader": READERS}),
    warmup=1,
    profiles={
        # every column first: its queries compile every column's read path in the one warm
        # application, so the narrow queries after it are not charged for warming up
        "tiny": profiles.tiny(sweep=Sweep(cartesian={"columns": [ALL, FOUR, ONE], "reader": READERS}), repetitions=2),
        "paper": profiles.paper(),
    },
)
