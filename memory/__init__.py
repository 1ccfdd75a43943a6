"""The library's front door (facade.py: ``Store``, ``open_store``) and the trust lifecycle behind it.

Writes pass the gates (gates/) and may be staged (pending); reads are scoped (scopes), annotated
with trust (trust, staleness, claims, origin) and logged (events); curation counts come from health.
"""
