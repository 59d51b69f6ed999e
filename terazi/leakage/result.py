"""What a leakage check asks for and what it finds: pydantic models, so the result goes to JSON as it is."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field

from terazi.schemas.leakage import LeakageOptions


class Example(BaseModel):
    """One benchmark text that shares an n-gram with a training text, both shown around it."""

    kind: Literal["query", "passage"]
    id: str
    train: str = Field(description="the training record: <file>:<line or row>")
    ngram: str = Field(description="the shared words, normalised")
    text: str = Field(description="the benchmark text around the shared words, normalised")
    train_text: str = Field(description="the training text around the shared words, normalised")


class Repeat(BaseModel):
    """A benchmark query that a training query repeats, exactly (score 100) or nearly."""

    query_id: str
    kind: Literal["exact", "near"]
    score: float
    query: str = Field(description="the benchmark query, normalised")
    train: str
    train_query: str = Field(description="the training query, normalised")


def _share(n: int, of: int) -> float:
    return n / of if of else 0.0


class DatasetLeakage(BaseModel):
    name: str
    path: str
    corpus_fingerprint: str = Field("", description="the corpus checked (an evaluation's `leakage` compares it)")
    queries: int
    passages: int
    queries_long_enough: int = Field(description="queries of at least n words: the others can only be repeats")
    judged_queries: int = Field(description="queries with at least one relevant passage in the split")
    query_hits: list[str] = Field(description="queries sharing an n-gram with training text, in file order")
    passage_hits: list[str] = Field(description="passages sharing an n-gram with training text, in corpus order")
    relevant_hit_queries: list[str] = Field(description="judged queries with a relevant passage among passage_hits")
    repeats: list[Repeat]
    contaminated_queries: list[str] = Field(
        description="queries to leave out of a clean score: n-gram hits and repeats, in file order"
    )
    train_hits: list[str] = Field(description="training records sharing an n-gram with this dataset")
    examples: list[Example]

    @computed_field
    @property
    def shares(self) -> dict[str, float]:
        return {
            "queries": _share(len(self.query_hits), self.queries),
            "passages": _share(len(self.passage_hits), self.passages),
            "queries_repeated": _share(len(self.repeats), self.queries),
            "queries_contaminated": _share(len(self.contaminated_queries), self.queries),
            "relevant_hit": _share(len(self.relevant_hit_queries), self.judged_queries),
        }


class SourceLeakage(BaseModel):
    name: str
    path: str
    files: int
    records: int
    texts: int
    query_texts: int
    records_hit: int


class LeakageResult(BaseModel):
    options: LeakageOptions
    held: Literal["benchmark", "training"]
    held_ngrams: int
    seconds: float
    datasets: list[DatasetLeakage]
    sources: list[SourceLeakage]
    train_hits: list[str] = Field(description="training records to drop: sharing an n-gram with any dataset")
