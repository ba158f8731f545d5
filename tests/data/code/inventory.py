"""Warehouse inventory: stock levels, reorder rules and valuation."""

from __future__ import annotations

from dataclasses import dataclass, field

REORDER_MARGIN = 1.25  # reorder when stock falls below 125% of the weekly demand


@dataclass
class Item:
    """One stock-keeping unit."""

    sku: str
    unit_cost: float
    quantity: int = 0
    weekly_demand: int = 0
    tags: list[str] = field(default_factory=list)

    def value(self) -> float:
        """The stock value of this item at unit cost."""
        return self.unit_cost * self.quantity

    def needs_reorder(self) -> bool:
        # Items with no demand are never reordered automatically.
        if self.weekly_demand == 0:
            return False
        return self.quantity < self.weekly_demand * REORDER_MARGIN


class Inventory:
    """All items of one warehouse, by SKU."""

    def __init__(self) -> None:
        self.items: dict[str, Item] = {}

    def receive(self, sku: str, quantity: int, unit_cost: float) -> Item:
        """Book a delivery: the unit cost becomes the weighted average of old and new stock."""
        item = self.items.setdefault(sku, Item(sku, unit_cost))
        total = item.quantity + quantity
        item.unit_cost = (item.unit_cost * item.quantity + unit_cost * quantity) / total
        item.quantity = total
        return item

    def ship(self, sku: str, quantity: int) -> None:
        item = self.items[sku]
        if quantity > item.quantity:
            raise ValueError(f"only {item.quantity} of {sku} in stock")
        item.quantity -= quantity

    def reorder_list(self) -> list[str]:
        return sorted(sku for sku, item in self.items.items() if item.needs_reorder())


def total_value(inventory: Inventory) -> float:
    """The value of the whole warehouse."""
    return round(sum(item.value() for item in inventory.items.values()), 2)
