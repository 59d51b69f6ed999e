"""terazi: weigh text rerankers and retrievers honestly."""

__version__ = "0.1.0"
