"""Pure pyarrow steps: generate, ingest, split, selectivity (no cluster needed)."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import data_deploy as dd
from data_deploy.formats import SUFFIXES, encode
from data_deploy.remote import OBJECT_SUFFIXES, final_name
from metareserve.errors import OperationalError, UsageError

ROWS = 150_000


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    return dd.generate(ROWS, seed=7, out=out, rows_per_file=40_000)


def _table(files):
    return pa.concat_tables(pq.read_table(f) for f in files)


def test_generate_schema_counts_and_consistency(generated):
    assert len(generated) == 4
    t = _table(generated)
    assert t.schema.equals(dd.SCHEMA) and t.num_rows == ROWS
    parts = sum(t.column(c).to_numpy() for c in dd.AMOUNT_PARTS)
    assert np.abs(t.column("total_amount").to_numpy() - parts).max() < 0.005
    assert pc.all(pc.greater_equal(t["tpep_dropoff_datetime"], t["tpep_pickup_datetime"])).as_py()
    assert set(pc.unique(t["payment_type"]).to_pylist()) <= {1, 2, 3, 4}
    assert pc.min(t["PULocationID"]).as_py() >= 1 and pc.max(t["DOLocationID"]).as_py() <= 265
    mean_distance = pc.mean(t["trip_distance"]).as_py()
    assert 1.5 < mean_distance < 6.0, mean_distance
    cash_tips = pc.filter(t["tip_amount"], pc.equal(t["payment_type"], 2))
    assert pc.max(cash_tips).as_py() == 0.0


def test_generate_is_deterministic_and_prefix_stable(generated, tmp_path):
    again = dd.generate(50_000, seed=7, out=tmp_path / "a", rows_per_file=50_000)
    assert _table(again).equals(_table(generated).slice(0, 50_000))
    other = dd.generate(1000, seed=8, out=tmp_path / "b")
    assert not _table(other).equals(_table(generated).slice(0, 1000))


def test_split_single_row_group_files_close_to_object_size(generated, tmp_path):
    size = 4 << 20
    report = dd.split(generated, out=tmp_path / "s", object_size="4MiB")
    assert report.changed and report.rows == ROWS and len(report.files) >= 2
    for f in report.files:
        md = pq.ParquetFile(f).metadata
        assert md.num_row_groups == 1 and f.stat().st_size <= size
        assert md.row_group(0).column(0).compression == "UNCOMPRESSED"
    assert report.min_fill > 0.99
    assert _table(report.files).equals(_table(generated))
    again = dd.split(generated, out=tmp_path / "s", object_size="4MiB")
    assert not again.changed and again.files == report.files


def test_split_compression_option(generated, tmp_path):
    report = dd.split(generated[:1], out=tmp_path / "z", object_size="4MiB", compression="zstd")
    assert pq.ParquetFile(report.files[0]).metadata.row_group(0).column(0).compression == "ZSTD"


def test_split_page_rows_writes_a_page_index_and_only_small_dictionaries(generated, tmp_path):
    """page_rows: every column chunk has an offset index (what the OSD index reads one row's pages
    by), the same rows; a split without it has none, and the option is part of what makes a split
    the same; a bad value, or pages of a format without them, is refused naming the option."""
    plain = dd.split(generated[:1], out=tmp_path / "whole", object_size="4MiB")
    paged = dd.split(generated[:1], out=tmp_path / "p", object_size="4MiB", page_rows=2000)
    assert paged.changed and paged.page_rows == 2000 and "pages of 2000 rows" in paged.summary()
    assert _table(paged.files).equals(_table(plain.files))
    rg = pq.ParquetFile(paged.files[0]).metadata.row_group(0)
    assert all(rg.column(i).has_offset_index for i in range(rg.num_columns))
    assert not pq.ParquetFile(plain.files[0]).metadata.row_group(0).column(0).has_offset_index
    assert not dd.split(generated[:1], out=tmp_path / "p", object_size="4MiB", page_rows=2000).changed
    for bad, fmt, message in ((0, "parquet", "page rows 0 is not a whole number of rows in 1..1048576"),
                              (True, "parquet", "page rows True is not"),
                              (100, "ipc", "page rows 100: only Parquet objects have pages .format ipc.")):
        with pytest.raises(UsageError, match=message):
            dd.split(generated[:1], out=tmp_path / "x", object_size="4MiB", format=fmt, page_rows=bad)


def test_paged_objects_keep_a_dictionary_only_where_the_values_fit_its_page(tmp_path):
    """A column of 200,000 distinct 8-byte values (1.6 MB: more than a dictionary page holds) is
    stored plain from its first page, where the writer's default makes a full dictionary and then
    falls back; a column of 7 values keeps its dictionary. (How many rows a page holds, the
    harness's scans see: tests/connector/test_osd_index.py.)"""
    n = 200_000
    table = pa.table({"many": pa.array(range(n), pa.int64()), "few": pa.array([i % 7 for i in range(n)], pa.int32())})
    paged, default = (pq.ParquetFile(pa.BufferReader(encode(table, "parquet", "none", rows)))
                      for rows in (2000, None))
    many, few = (paged.metadata.row_group(0).column(i) for i in range(2))
    assert "RLE_DICTIONARY" not in many.encodings and not many.has_dictionary_page, many.encodings
    assert "RLE_DICTIONARY" in few.encodings and few.has_dictionary_page
    assert default.metadata.row_group(0).column(0).has_dictionary_page   # the writer's own choice
    assert paged.read().equals(table)


def test_split_as_arrow_ipc_files(generated, tmp_path):
    """format="ipc": Arrow IPC files of one record batch, each within the object size, the same
    rows in the same order; idempotent; a deploy takes them (describe), named with their suffix;
    a codec IPC cannot store is refused naming the format."""
    size = 4 << 20
    report = dd.split(generated, out=tmp_path / "i", object_size="4MiB", format="ipc", compression="zstd")
    assert report.changed and report.format == "ipc" and report.rows == ROWS and len(report.files) >= 2
    for f in report.files:
        assert f.suffix == ".arrow" and f.stat().st_size <= size
        reader = ipc.open_file(str(f))
        assert reader.num_record_batches == 1
    assert pa.concat_tables(ipc.open_file(str(f)).read_all() for f in report.files).equals(_table(generated))
    assert not dd.split(generated, out=tmp_path / "i", object_size="4MiB", format="ipc", compression="zstd").changed
    entries = dd.describe(tmp_path / "i", size)
    assert [e["name"] for e in entries] == [f.name for f in report.files] and sum(e["rows"] for e in entries) == ROWS
    assert final_name(report.files[0].name, 1, 2) == report.files[0].stem + "-c1-l2.arrow"
    with pytest.raises(UsageError, match="'snappy' is not one of none, zstd, lz4 .the codecs of format ipc"):
        dd.split(generated, out=tmp_path / "x", object_size="4MiB", format="ipc", compression="snappy")
    with pytest.raises(UsageError, match="format 'orc' is not one of parquet, ipc, csv"):
        dd.split(generated, out=tmp_path / "x", object_size="4MiB", format="orc")


def test_split_as_csv_files(generated, tmp_path):
    """format="csv": CSV files (a header line, then a line per row) within the object size that
    Arrow's CSV reader, given the data's schema, reads back as the same rows in the same order;
    idempotent; a deploy takes them; CSV stores no codec, and says so naming the format."""
    size = 4 << 20
    report = dd.split(generated, out=tmp_path / "c", object_size="4MiB", format="csv")
    assert report.rows == ROWS and len(report.files) > 1
    schema = _table(generated).schema
    opts = pacsv.ConvertOptions(column_types=schema, null_values=[""], strings_can_be_null=True)
    back = []
    for f in report.files:
        assert f.suffix == ".csv" and f.stat().st_size <= size
        assert f.read_text().split("\n", 1)[0] == ",".join(f'"{n}"' for n in schema.names)
        back.append(pacsv.read_csv(f, convert_options=opts))
    assert pa.concat_tables(back).equals(_table(generated))
    assert not dd.split(generated, out=tmp_path / "c", object_size="4MiB", format="csv").changed
    assert sum(e["rows"] for e in dd.describe(tmp_path / "c", size)) == ROWS
    assert final_name(report.files[0].name, 1, 2) == report.files[0].stem + "-c1-l2.csv"
    with pytest.raises(UsageError, match="'zstd' is not one of none .the codecs of format csv"):
        dd.split(generated, out=tmp_path / "x", object_size="4MiB", format="csv", compression="zstd")


def test_deployed_names_keep_every_formats_suffix():
    """The deploy node's copy of the suffixes (stdlib only there) names every stored format's."""
    assert {s.lstrip(".") for s in SUFFIXES.values()} == set(OBJECT_SUFFIXES)


def test_csv_spells_nan_and_infinities_as_spark_reads_them():
    """Arrow's CSV writer writes nan and inf, which Spark's CSV reader takes for NULL: the stored
    text says NaN, Inf and -Inf; NULL is an empty field, an empty string a quoted one."""
    table = pa.table({"x": [1.5, float("nan"), float("inf"), float("-inf"), None], "s": ["a", "", None, "b,c", "d"]})
    lines = encode(table, "csv", "none").to_pybytes().decode().splitlines()
    assert lines == ['"x","s"', '"1.5","a"', '"NaN",""', '"Inf",', '"-Inf","b,c"', ',"d"']


@pytest.mark.parametrize("size, text", [("100KiB", "multiple of 64KiB"), ("2MiB", "outside 4MiB..256MiB"),
                                        ("512MiB", "outside"), ("sixteen", "not a size"),
                                        ("16MB", "16000000 bytes is not a multiple of 64KiB"),
                                        ("0.3B", "not a whole number of bytes")])
def test_bad_object_sizes(generated, tmp_path, size, text):
    with pytest.raises(UsageError, match=text):
        dd.split(generated, out=tmp_path / "x", object_size=size)


@pytest.mark.parametrize("size", ["4MiB", "4M", "4 mib", "0.00390625GiB", "4.0MiB", 4 << 20, "4194304"])
def test_object_sizes_in_any_unit_of_the_shared_table(size):
    assert dd.check_object_size(size) == 4 << 20


def test_row_group_that_cannot_fit(tmp_path):
    wide = pa.table({"blob": pa.array([b"x" * (5 << 20)], pa.binary())})
    pq.write_table(wide, tmp_path / "wide.parquet")
    with pytest.raises(UsageError, match="cannot fit"):
        dd.split(tmp_path / "wide.parquet", out=tmp_path / "o", object_size="4MiB")


@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.1, 0.25, 0.5, 0.9, 1.0])
def test_selectivity_hits_fraction(generated, fraction):
    threshold = dd.selectivity_threshold(generated[0].parent, fraction)
    t = _table(generated)
    got = pc.sum(pc.less(t["total_amount"], threshold)).as_py() / t.num_rows
    assert abs(got - fraction) <= 0.001


def test_selectivity_on_table_and_other_column(generated):
    t = _table(generated)
    threshold = dd.selectivity_threshold(t, 0.3, column="trip_distance")
    assert abs(pc.sum(pc.less(t["trip_distance"], threshold)).as_py() / t.num_rows - 0.3) <= 0.001


def test_selectivity_bad_input(generated):
    with pytest.raises(UsageError, match="unknown column 'fare'.*total_amount"):
        dd.selectivity_threshold(generated, 0.1, column="fare")
    with pytest.raises(UsageError, match="not numeric"):
        dd.selectivity_threshold(generated, 0.1, column="store_and_fwd_flag")
    with pytest.raises(UsageError, match="outside"):
        dd.selectivity_threshold(generated, 1.5)
    few = pa.table({"x": [1.0] * 50 + [2.0] * 50})
    with pytest.raises(OperationalError, match="equal values"):
        dd.selectivity_threshold(few, 0.3, column="x")


def test_ingest_tlc_parquet_and_csv(generated, tmp_path):
    real = _table(generated).slice(0, 2000)
    # an older TLC year: lower-case airport_fee, float passenger_count, no congestion column
    old = real.drop_columns(["congestion_surcharge"]).rename_columns(
        [c if c != "Airport_fee" else "airport_fee" for c in real.drop_columns(["congestion_surcharge"]).column_names])
    old = old.set_column(old.schema.get_field_index("passenger_count"), "passenger_count",
                         pc.cast(old["passenger_count"], pa.float64()))
    pq.write_table(old, tmp_path / "yellow_tripdata_2019-01.parquet")
    pacsv.write_csv(real, tmp_path / "yellow_tripdata_2024-01.csv")
    files = dd.ingest([tmp_path / "yellow_tripdata_2019-01.parquet", tmp_path / "yellow_tripdata_2024-01.csv"],
                      tmp_path / "out")
    t = _table(files)
    assert t.schema.equals(dd.SCHEMA) and t.num_rows == 4000
    assert t.slice(0, 2000)["congestion_surcharge"].null_count == 2000
    assert t.slice(0, 2000).drop_columns(["congestion_surcharge"]).equals(real.drop_columns(["congestion_surcharge"]))
    assert t.slice(2000).equals(real)
    bad = pa.table({"a": [1]})
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(UsageError, match="bad.parquet: no column 'VendorID'"):
        dd.ingest(tmp_path / "bad.parquet", tmp_path / "o2")
