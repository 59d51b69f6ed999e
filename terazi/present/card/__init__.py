"""The evaluation section of a model card, written from a results folder (`terazi card RESULTS --system NAME`)."""

from terazi.present.card.build import FORMATS, Card, build_card, card_files, check_format
from terazi.present.card.inputs import RunFolder, read_folder

__all__ = ["FORMATS", "Card", "RunFolder", "build_card", "card_files", "check_format", "read_folder"]
