"""kenning over HTTP: a JSON API and a curation page, both thin calls into the library.

``kenning serve --http`` runs ``create_app`` on uvicorn (the ``http`` extra). Every route opens
nothing of its own: it validates its arguments, calls one ``Store`` method and returns its JSON
shape; the library's errors become status codes in ``errors.py``.
"""

from kenning.serve.http.app import DEFAULT_HOST, DEFAULT_PORT, create_app
from kenning.serve.http.run import serve

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "create_app", "serve"]
