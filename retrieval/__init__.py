"""Everything that turns a query into ranked, explained hits; never imports the store."""
