"""API models of the admin domain."""

from __future__ import annotations

from pydantic import BaseModel, Field

from chunkbench.models import StrategyName


class ModelRoleIn(BaseModel):
    model_id: str = Field(min_length=1)


class ThresholdIn(BaseModel):
    threshold: float = Field(gt=0, le=1, description="Semantic cut threshold in (0, 1]")


class CollectionIn(BaseModel):
    strategy: StrategyName
    model_id: str = Field(min_length=1)


class CollectionOut(BaseModel):
    name: str
    points: int
    dimension: int | None = None
    strategy: str | None = Field(None, description="None for collections chunkbench did not create")
    model: str | None = Field(None, description="Sanitised model id from the collection name")
