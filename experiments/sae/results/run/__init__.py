"""A run's own state: its directory and tidy results table (:mod:`.directory`), ledger
(:mod:`.ledger`), provenance (:mod:`.provenance`) and what it recorded (the storage side's work,
:mod:`.storage_work`; Spark's event logs, :mod:`.eventlog`; host capacities, :mod:`.capacities`).
Imports planning, no other group of results."""
