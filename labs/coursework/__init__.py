"""Course work: material and assignments handed out into notebook homes, snapshots collected at the deadline
(labs.models.coursework; files.py does the file handling, services.py the writes, selectors.py the reads)."""
