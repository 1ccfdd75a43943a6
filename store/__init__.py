"""Everything durable: the SQLite store, its records and the lexical index."""
