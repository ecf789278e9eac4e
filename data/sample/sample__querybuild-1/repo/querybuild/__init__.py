"""querybuild: build and merge URL query strings predictably."""

from .build import build_query
from .builder import QueryBuilder
from .encoding import encode_component, iter_pairs, to_text
from .url import merge_url, query_params, remove_params

__version__ = "0.9.3"

__all__ = [
    "QueryBuilder",
    "build_query",
    "encode_component",
    "iter_pairs",
    "merge_url",
    "query_params",
    "remove_params",
    "to_text",
]
