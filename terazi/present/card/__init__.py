"""The evaluation section of a model card, written from a results folder (`terazi card RESULTS --system NAME`)."""

from terazi.present.card.build import Card, build_card
from terazi.present.card.folder import RunFolder, read_folder

__all__ = ["Card", "RunFolder", "build_card", "read_folder"]
