"""The PostgreSQL + pgvector backend: the same tables as the SQLite file, behind the same Database seam."""
