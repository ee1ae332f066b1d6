"""A shuffle-heavy SQL job (an aggregation over a join) whose reducers read Riffle's merged files.

    mkdir -p /tmp/spark-local
    riffle-merger serve --listen 127.0.0.1:7338 --local-dir /tmp/spark-local --no-fsync &
    riffle status 127.0.0.1:7338 --wait 30
    spark-submit --master "local-cluster[2,1,1024]" --conf spark.local.dir=/tmp/spark-local \
        --conf spark.riffle.enabled=true --conf spark.riffle.mergers=127.0.0.1:7338 \
        --conf spark.riffle.cost.enabled=false examples/sql_shuffle_with_riffle.py

The query has no Riffle code: the merger on each node concatenates the map outputs of a shuffle,
N at a time, and Spark's own reducers fetch N times fewer blocks. Riffle does that only where it pays:
on a fast local disk its cost model finds this query's exchanges, which adaptive execution coalesces to
a few reduce tasks, not worth merging (the driver's log says so), and they run as plain Spark, with
nothing held. ``spark.riffle.cost.enabled=false``, as above, merges every group anyway. Without the
Riffle confs it is plain Spark.
"""

from pyspark.sql import SparkSession

QUERY = """
SELECT c.region, count(*) AS orders, sum(o.amount) AS revenue
FROM orders o JOIN customers c ON o.customer = c.id
GROUP BY c.region
ORDER BY c.region
"""

if __name__ == "__main__":
    spark = SparkSession.builder.appName("riffle-sql-shuffle").getOrCreate()
    spark.conf.set("spark.sql.shuffle.partitions", "48")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # a shuffle join, not a broadcast
    spark.range(0, 400_000, 1, 40).selectExpr("id", "id % 5000 AS customer", "(id * 7) % 100 AS amount") \
        .createOrReplaceTempView("orders")
    spark.range(0, 5000, 1, 20).selectExpr("id", "concat('region-', id % 8) AS region").createOrReplaceTempView("customers")
    for row in spark.sql(QUERY).collect():
        print(f"{row.region}: {row.orders} orders, revenue {row.revenue}")
    spark.stop()
