"""Sample seeds of Reasoning & Analysis and Dialogue Context (all text written for the demo)."""

from __future__ import annotations

from functools import partial

from data.sample import images
from data.sample.seeds import Seed
from data.sample.seeds_perception import (
    CIRCLES_AND_SQUARES,
    CLOCK_440,
    NIGHT_PARK,
    PARK,
    RECEIPT,
)

CLOCK_340 = partial(images.clock_face, 3, 40, "Platform 2")
TANK = partial(
    images.line_chart, "Water in the tank (litres)", ["0h", "1h", "2h", "3h"], [100, 85, 70, 55]
)
SALES = partial(
    images.bar_chart, "Monthly sales (units)", ["Jan", "Feb", "Mar", "Apr"], [120, 95, 150, 130]
)
FRUIT = partial(
    images.pie_chart,
    "Favourite fruit survey",
    ["Apple", "Banana", "Grape", "Orange"],
    [35, 25, 15, 25],
)
TRIANGLE_68 = partial(images.right_triangle, "a = 8 cm", "b = 6 cm", "c = ?")
EQUATION = partial(images.text_card, "SOLVE", ["3x + 5 = 20", "", "x = ?"])
PHONES = partial(
    images.text_card,
    "PHONE A   vs   PHONE B",
    [
        ("", "A", "B"),
        ("Battery", "20 h", "15 h"),
        ("Weight", "180 g", "150 g"),
        ("Price", "$399", "$299"),
        ("Camera", "12 MP", "48 MP"),
    ],
    ruled=True,
)
RAIN = partial(
    images.bar_chart, "Average rainfall in July (mm)", ["Oslo", "Rome", "Lima"], [81, 19, 1]
)

SEEDS: tuple[Seed, ...] = (
    Seed(
        task="Reasoning",
        number=1,
        language="en",
        image=CLOCK_340,
        variants=(
            "The clock shows the time now. My train leaves in 35 minutes. When does it leave?",
            "If the train departs 35 minutes after the time on this clock, what is the "
            "departure time?",
            "Using the clock, work out the time 35 minutes from now.",
        ),
        reference="The clock shows 3:40, so the train leaves at 4:15.",
        fact="the clock shows 3:40, so 35 minutes later is 4:15",
        answers={
            "excellent": "The short red hand is between 3 and 4 and the long hand points at 8, so "
            "it is 3:40 now. Adding 35 minutes: 3:40 + 20 min = 4:00, plus 15 min = 4:15. The "
            "train leaves at 4:15.",
            "thin": "4:15.",
            "partial": "It is 3:40 now, so the train leaves a bit after 4 o'clock.",
            "flawed": "The clock shows 8:15, so the train leaves at 8:50.",
            "wrong": "The train leaves at 3:05.",
        },
    ),
    Seed(
        task="Reasoning",
        number=2,
        language="en",
        image=TANK,
        variants=(
            "If the trend continues, after how many hours will the tank be empty?",
            "The chart shows the water left in a tank. When will it run dry at this rate?",
            "Extrapolate the line: at what time does the tank reach 0 litres?",
        ),
        reference="The tank loses 15 litres per hour; 55 litres remain at 3h, which takes another "
        "3 h 40 min, so it is empty after about 6 h 40 min (6.67 h).",
        fact="the tank loses 15 L per hour and is empty after about 6 h 40 min",
        answers={
            "excellent": "The level falls by 15 litres every hour (100, 85, 70, 55). At 3h, 55 "
            "litres are left; 55 / 15 = 3.67 hours more. So the tank is empty about 6.67 hours "
            "after the start, i.e. after roughly 6 h 40 min.",
            "thin": "After about 6.7 hours.",
            "partial": "It loses 15 litres an hour, so it will be empty after a few more hours.",
            "flawed": "It loses 10 litres per hour, so it is empty after 8.5 hours.",
            "wrong": "The tank is filling up, so it will never be empty.",
        },
    ),
    Seed(
        task="Chart",
        number=1,
        language="en",
        image=SALES,
        variants=(
            "Which month had the highest sales, and by how much did it beat the lowest "
            "month? Answer as 'Month, difference'.",
            "Give the best month and its lead over the worst month, in the form "
            "'Month, difference'.",
            "From the chart: top month and the gap to the bottom month ('Month, difference').",
        ),
        reference="March, 55",
        fact="March is highest with 150 units, 55 more than February's 95",
        answers={
            "excellent": "March, 55 (March 150 units vs February 95 units).",
            "thin": "March, 55",
            "partial": "March had the highest sales (150 units).",
            "flawed": "April, 35",
            "wrong": "January, 10",
        },
    ),
    Seed(
        task="Chart",
        number=2,
        language="zh",
        image=FRUIT,
        variants=(
            "苹果和葡萄的占比之和是多少？",
            "根据饼图，喜欢苹果或葡萄的人一共占多少？",
            "请计算图中苹果与葡萄两部分的百分比之和。",
        ),
        reference="根据饼图，苹果占35%，葡萄占15%，两者之和为50%。",
        fact="苹果35%加葡萄15%，合计50%",
        answers={
            "excellent": "根据饼图，苹果占35%，葡萄占15%，所以两者的占比之和是35% + 15% = 50%，"
            "正好占调查人数的一半。",
            "thin": "50%。",
            "partial": "苹果占35%，葡萄的比例较小。",
            "flawed": "苹果占25%，葡萄占15%，合计40%。",
            "wrong": "合计75%。",
        },
    ),
    Seed(
        task="Problem",
        number=1,
        language="en",
        image=TRIANGLE_68,
        variants=(
            "Find the length of side c.",
            "How long is the hypotenuse c? Show your working.",
            "Solve for c in this right triangle.",
        ),
        reference="By Pythagoras, c = sqrt(8^2 + 6^2) = sqrt(100) = 10 cm.",
        fact="c = sqrt(8^2 + 6^2) = 10 cm",
        answers={
            "excellent": "The triangle has a right angle between a and b, so c is the hypotenuse. "
            "c^2 = a^2 + b^2 = 8^2 + 6^2 = 64 + 36 = 100, hence c = 10 cm.",
            "thin": "c = 10 cm.",
            "partial": "Use the Pythagorean theorem: c^2 = 8^2 + 6^2.",
            "flawed": "c^2 = 8 + 6 = 14, so c is about 3.7 cm.",
            "wrong": "c = 14 cm, because c = a + b.",
        },
    ),
    Seed(
        task="Problem",
        number=2,
        language="zh",
        image=EQUATION,
        variants=("解出图中的方程。", "请求出x的值，并写出步骤。", "图中方程的解是多少？"),
        reference="3x + 5 = 20，两边减5得3x = 15，再除以3得x = 5。",
        fact="3x + 5 = 20 的解是 x = 5",
        answers={
            "excellent": "解：3x + 5 = 20，两边同时减去5，得3x = 15；两边同时除以3，得x = 5。"
            "检验：3 × 5 + 5 = 20，正确。",
            "thin": "x = 5。",
            "partial": "先把5移到右边，得到3x = 15。",
            "flawed": "3x = 25，所以x约等于8.3。",
            "wrong": "x = 20。",
        },
    ),
    Seed(
        task="Comparison",
        number=1,
        language="en",
        image=PHONES,
        variants=(
            "Compare the two phones. Which suits a traveller who takes many photos?",
            "Give a structured comparison of phone A and phone B for a photo-loving traveller.",
            "Which phone would you recommend to someone who travels and photographs a lot, "
            "and why?",
        ),
        reference="Phone A: 20 h battery, 180 g, $399, 12 MP camera. Phone B: 15 h battery, "
        "150 g, $299, 48 MP camera. For many photos phone B is better (48 MP camera, lighter, "
        "cheaper); its shorter battery can be handled with a power bank. Phone A wins on battery.",
        fact="phone B has the better camera (48 vs 12 MP), is lighter and cheaper, phone A has the "
        "longer battery",
        answers={
            "excellent": "Battery: A lasts 20 h, B 15 h, so A wins.\nWeight: B is lighter (150 g "
            "vs 180 g).\nPrice: B is $100 cheaper ($299 vs $399).\nCamera: B has 48 MP against "
            "12 MP.\nRecommendation: for a traveller who takes many photos, phone B — its camera "
            "is far better and it is lighter and cheaper; carry a power bank for the shorter "
            "battery.",
            "thin": "Phone B, because its camera is 48 MP instead of 12 MP.",
            "partial": "Phone A has a longer battery and phone B is cheaper. Both are fine phones.",
            "flawed": "Phone A, since it has the 48 MP camera and is the lighter one.",
            "wrong": "Phone A is better in every way.",
        },
    ),
    Seed(
        task="Comparison",
        number=2,
        language="en",
        image=RAIN,
        variants=(
            "Compare the July rainfall of the three cities.",
            "How do Oslo, Rome and Lima differ in July rainfall?",
            "Rank the cities by July rainfall and describe the differences.",
        ),
        reference="Oslo is wettest (81 mm), Rome much drier (19 mm), and Lima almost dry (1 mm). "
        "Oslo gets about four times Rome's rain and eighty times Lima's.",
        fact="Oslo 81 mm > Rome 19 mm > Lima 1 mm",
        answers={
            "excellent": "Ranking: Oslo (81 mm) > Rome (19 mm) > Lima (1 mm). Oslo gets about four "
            "times as much July rain as Rome, while Lima is almost completely dry — it lies on a "
            "coastal desert where July is winter with fog but hardly any rain.",
            "thin": "Oslo is the wettest, then Rome, then Lima.",
            "partial": "Oslo has the most rain, 81 mm.",
            "flawed": "Rome is the wettest with 81 mm, Oslo has 19 mm and Lima 1 mm.",
            "wrong": "All three cities get about the same rainfall.",
        },
    ),
    Seed(
        task="Writing",
        number=1,
        language="en",
        image=PARK,
        variants=(
            "Write a four-line poem inspired by this picture.",
            "Compose a short poem (4 lines) about the scene.",
            "Write a little rhyming poem based on the image.",
        ),
        reference="A poem about a sunny afternoon: a kite dancing above a red-roofed house and a "
        "tree, a happy person on the grass. Any fluent, vivid four-line poem that uses the scene "
        "is a good answer.",
        fact="the poem should use the sunny scene with the kite, house and tree",
        answers={
            "excellent": "An orange kite goes dancing where the summer breezes play,\nabove the "
            "red-roofed cottage at the quiet end of day;\nthe old tree hums a lullaby, the sun "
            "hangs warm and round,\nand one small laughing figure holds the sky down to the "
            "ground.",
            "thin": "The sun is bright, the kite is high,\nthe house is red beneath the sky.",
            "partial": "The sun shines bright on the house today. It is a nice day to play outside "
            "and have fun.",
            "flawed": "The moon is cold, the night is long,\nthe city sleeps, the rain is strong.",
            "wrong": "Here is a list of kite brands: SkyHigh, WindDancer, AirPro.",
        },
    ),
    Seed(
        task="Writing",
        number=2,
        language="zh",
        image=NIGHT_PARK,
        variants=(
            "根据图片写一段不少于50字的小故事。",
            "请以这张图为灵感，写一个短故事。",
            "看图写话：写一段温馨的小故事。",
        ),
        reference="围绕夜晚的小屋、亮着灯的窗户、月亮和星星，以及草地上的人，写一段通顺、有画面感"
        "的小故事即可，内容不必与参考一致。",
        fact="故事应当用到夜晚、亮灯的小屋、月亮星星和草地上的人",
        answers={
            "excellent": "夜深了，月亮弯弯地挂在天边，星星一颗接一颗亮起来。小屋的两扇窗户透出暖黄"
            "的灯光，妈妈正在屋里热着牛奶。小明站在院子的草地上，仰着头数星星，数到第六颗时，他"
            "听见妈妈喊他回家。他笑着跑向那扇蓝色的小门，心想：明天还要来数。",
            "thin": "晚上，小明在家门口看星星，然后回家睡觉了。",
            "partial": "这是一个晚上，天上有月亮和星星，还有一栋房子。",
            "flawed": "中午的太阳很大，小明在城市的高楼里上班，忙了一整天。",
            "wrong": "房屋的价格由地段、面积和装修决定。",
        },
    ),
    Seed(
        task="Coherence",
        number=1,
        language="en",
        image=RECEIPT,
        history=(
            (
                "What is in this picture?",
                "It is a receipt from City Bakery listing a sourdough loaf, two croissants and "
                "a coffee, with the total at the bottom.",
            ),
        ),
        variants=(
            "How much did each croissant cost?",
            "What was the price of one croissant?",
            "And the croissants — how much per piece?",
        ),
        reference="Two croissants cost 5.00 together, so each croissant cost 2.50.",
        fact="two croissants cost 5.00, so one costs 2.50",
        answers={
            "excellent": "The receipt lists '2 x Croissant 5.00', so the two croissants cost 5.00 "
            "together and each one cost 2.50.",
            "thin": "2.50 each.",
            "partial": "The croissants cost 5.00.",
            "flawed": "Each croissant cost 4.50.",
            "wrong": "The croissants were free with the coffee.",
        },
    ),
    Seed(
        task="Coherence",
        number=2,
        language="zh",
        image=SALES,
        history=(
            (
                "图中显示了什么？",
                "这是一张月度销量柱状图，显示了一月到四月的销量：一月120，二月95，三月150，"
                "四月130。",
            ),
        ),
        variants=(
            "那么这四个月的平均销量是多少？",
            "这四个月平均每月卖了多少？",
            "请算一下这几个月的月均销量。",
        ),
        reference="四个月总销量为120 + 95 + 150 + 130 = 495，平均每月495 ÷ 4 = 123.75。",
        fact="四个月总销量495，平均123.75",
        answers={
            "excellent": "根据上面提到的数据，总销量为120 + 95 + 150 + 130 = 495，平均每月销量为"
            "495 ÷ 4 = 123.75。",
            "thin": "平均约123.75。",
            "partial": "总销量是495。",
            "flawed": "平均销量是150。",
            "wrong": "平均销量是95。",
        },
    ),
    Seed(
        task="Incoherence",
        number=101,
        language="en",
        image=CIRCLES_AND_SQUARES,
        history=(("How many blue squares are there?", "There are 6 blue squares."),),
        variants=(
            "Are you sure? Please count again.",
            "That doesn't look right. Count them again.",
            "I only see fewer. Check the number of blue squares once more.",
        ),
        reference="I miscounted earlier: there are 4 blue squares, not 6 (the other shapes are 7 "
        "red circles).",
        fact="there are 4 blue squares, not 6",
        answers={
            "excellent": "You are right, I miscounted. Counting again, there are 4 blue squares, "
            "not 6. The other shapes in the picture are 7 red circles.",
            "thin": "Sorry, there are 4.",
            "partial": "Sorry, I may have miscounted; there are fewer than 6 blue squares.",
            "flawed": "Apologies — there are 7 blue squares.",
            "wrong": "Yes, I am sure: there are 6 blue squares.",
        },
    ),
    Seed(
        task="Incoherence",
        number=102,
        language="zh",
        image=CLOCK_440,
        history=(("图中时钟显示几点？", "时钟显示的是8点20分。"),),
        variants=(
            "不对吧，你再仔细看看。",
            "你说错了，请重新看一下时间。",
            "确定吗？再看一遍时钟。",
        ),
        reference="抱歉，我之前把时针和分针看反了。红色短针（时针）在4和5之间，长针（分针）指向8，"
        "所以时间是4点40分。",
        fact="时针在4和5之间、分针指向8，时间是4点40分，不是8点20分",
        answers={
            "excellent": "抱歉，之前我把时针和分针看反了。红色的短针是时针，位于4和5之间；黑色的"
            "长针是分针，指向8，所以正确的时间是4点40分。",
            "thin": "抱歉，是4点40分。",
            "partial": "抱歉，我之前说错了，请以实际时间为准。",
            "flawed": "抱歉，时间是8点40分。",
            "wrong": "没有错，就是8点20分。",
        },
    ),
)
