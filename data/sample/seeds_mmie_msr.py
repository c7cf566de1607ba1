"""Sample MMIE-style multi-step reasoning items (``MSR``): the only category with a ground-truth
final answer. The other categories are :mod:`data.sample.seeds_mmie`, which lists them all.
"""

from __future__ import annotations

from functools import partial

from data.sample import images
from data.sample.seeds import MmieSeed, MmieStep
from data.sample.seeds_perception import CIRCLES_AND_SQUARES
from data.sample.seeds_reasoning import SALES, TANK, TRIANGLE_68

MSR_SEEDS: tuple[MmieSeed, ...] = (
    MmieSeed(
        "MSR-001",
        "mathematics",
        "Look at the shapes:",
        CIRCLES_AND_SQUARES,
        "If every circle is worth 3 points and every square 5 points, what is the total? Show "
        "each step with a picture.",
        (
            MmieStep(
                "There are 7 circles: 7 x 3 = 21 points.",
                "Circles: 21.",
                "7 circles x 3 = 21",
                "circle",
                7,
                "red",
            ),
            MmieStep(
                "There are 4 squares: 4 x 5 = 20 points.",
                "Squares: 20.",
                "4 squares x 5 = 20",
                "square",
                4,
                "blue",
            ),
            MmieStep(
                "Total: 21 + 20 = 41 points.", "Total 41.", "21 + 20 = 41", "star", 1, "green"
            ),
        ),
        fact="7 x 3 + 4 x 5 = 41",
        ground_truth="41 points",
        wrong_final="Total: 35 points.",
    ),
    MmieSeed(
        "MSR-002",
        "statistics",
        "Monthly sales:",
        SALES,
        "What is the mean monthly sales figure, and which months are above it? Illustrate.",
        (
            MmieStep(
                "Sum: 120 + 95 + 150 + 130 = 495.", "Sum 495.", "Sum = 495", "bars", 4, "blue"
            ),
            MmieStep(
                "Mean: 495 / 4 = 123.75.", "Mean 123.75.", "Mean = 123.75", "bars", 2, "purple"
            ),
            MmieStep(
                "Above the mean: March (150) and April (130).",
                "March, April.",
                "Above: Mar, Apr",
                "bars",
                2,
                "green",
            ),
        ),
        fact="the mean is 123.75; March and April are above it",
        ground_truth="Mean 123.75; March and April are above it.",
        wrong_final="Mean 130; only March is above it.",
    ),
    MmieSeed(
        "MSR-003",
        "physics",
        "Water in a leaking tank:",
        TANK,
        "How many litres leak per hour, and how much is left after 5 hours? Show the steps.",
        (
            MmieStep(
                "Each hour the level drops by 15 litres (100 -> 85 -> 70 -> 55).",
                "15 L per hour.",
                "-15 L every hour",
                "bars",
                3,
                "blue",
            ),
            MmieStep(
                "After 5 hours: 100 - 5 x 15 = 25 litres.",
                "25 L left.",
                "5 h: 25 L left",
                "bars",
                1,
                "blue",
            ),
        ),
        fact="15 L leak per hour; 25 L are left after 5 hours",
        ground_truth="15 litres per hour; 25 litres after 5 hours.",
        wrong_final="10 litres per hour; 50 litres after 5 hours.",
    ),
    MmieSeed(
        "MSR-004",
        "mathematics",
        "A right triangle:",
        TRIANGLE_68,
        "Find its area and its perimeter, step by step with sketches.",
        (
            MmieStep(
                "Hypotenuse: sqrt(8^2 + 6^2) = 10 cm.",
                "c = 10.",
                "c = 10 cm",
                "triangle",
                1,
                "blue",
            ),
            MmieStep("Area: 8 x 6 / 2 = 24 cm^2.", "Area 24.", "Area = 24", "square", 1, "green"),
            MmieStep(
                "Perimeter: 8 + 6 + 10 = 24 cm.",
                "Perimeter 24.",
                "Perimeter = 24",
                "triangle",
                3,
                "purple",
            ),
        ),
        fact="area 24 cm^2 and perimeter 24 cm",
        ground_truth="Area 24 cm^2, perimeter 24 cm.",
        wrong_final="Area 48 cm^2, perimeter 14 cm.",
    ),
    MmieSeed(
        "MSR-005",
        "finance",
        "Savings account:",
        partial(images.text_card, "ACCOUNT", ["Deposit: $1000", "Simple interest: 5% a year"]),
        "How much is in the account after 3 years? Show each year with a picture.",
        (
            MmieStep(
                "Each year the interest is 5% of $1000 = $50.",
                "$50 a year.",
                "Interest: $50 / year",
                "bars",
                1,
                "green",
            ),
            MmieStep(
                "After 3 years: 3 x $50 = $150 interest.",
                "$150 interest.",
                "3 years: $150",
                "bars",
                3,
                "green",
            ),
            MmieStep(
                "Balance: $1000 + $150 = $1150.", "$1150.", "Balance $1150", "star", 1, "yellow"
            ),
        ),
        fact="simple interest gives $1150 after 3 years",
        ground_truth="$1150",
        wrong_final="Balance: $1157.63.",
    ),
)
