"""The evaluation section of a model card, written from a results folder (`terazi card RESULTS --system NAME`)."""

from terazi.card.build import Card, build_card
from terazi.card.folder import RunFolder, read_folder

__all__ = ["Card", "RunFolder", "build_card", "read_folder"]
