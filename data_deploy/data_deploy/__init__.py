"""NYC-taxi data as fixed-size single-row-group Parquet objects in CephFS."""
