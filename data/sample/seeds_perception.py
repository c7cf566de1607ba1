"""Sample seeds of the category Perception & Understanding (all text written for the demo)."""

from __future__ import annotations

from functools import partial

from data.sample import images
from data.sample.seeds import Seed

PARK = partial(images.park_scene)
NIGHT_PARK = partial(images.park_scene, night=True)
THREE_SHAPES = partial(
    images.shapes_row,
    [("circle", "red", "START"), ("square", "blue", "MIDDLE"), ("triangle", "green", "END")],
)
NUMBERED_SHAPES = partial(
    images.shapes_row,
    [("star", "yellow", "1"), ("triangle", "purple", "2"), ("circle", "green", "3")],
)
CLOCK_440 = partial(images.clock_face, 4, 40)
CIRCLES_AND_SQUARES = partial(
    images.counting_scene, [("circle", "red", 7), ("square", "blue", 4)], seed=11
)
STARS_MIX = partial(
    images.counting_scene,
    [("star", "yellow", 5), ("triangle", "green", 3), ("circle", "blue", 6)],
    seed=12,
)
RECEIPT = partial(
    images.text_card,
    "CITY BAKERY",
    [("Sourdough loaf", "4.50"), ("2 x Croissant", "5.00"), ("Coffee", "3.20"), ("TOTAL", "12.70")],
    ruled=True,
)
LIBRARY_NOTICE = partial(
    images.text_card,
    "NOTICE",
    [
        "The library closes at 6 pm",
        "on Sunday, 3 December.",
        "Please return books",
        "in the box by the front door.",
    ],
)
GYM_MEME = partial(
    images.meme_panels,
    "AFTER MY FIRST WEEK AT THE GYM",
    "What I expected",
    "What I got",
    ("strong", "tired"),
)
DEADLINE_MEME = partial(
    images.meme_panels,
    "THE DEADLINE",
    "Day 1: plenty of time",
    "Last night: 0% done",
    ("happy", "sad"),
    bottom="due tomorrow 9:00",
)
TRIANGLE_345 = partial(images.right_triangle, "a = 4", "b = 3", "c = ?")
FORMULAS = partial(images.text_card, "WHAT ARE THESE?", ["1.  H2O", "2.  NaCl", "3.  CO2"])

SEEDS: tuple[Seed, ...] = (
    Seed(
        task="Description",
        number=1,
        language="en",
        image=PARK,
        variants=(
            "Describe the image.",
            "What does this picture show? Describe it in detail.",
            "Give a detailed description of the scene.",
        ),
        reference="A simple drawing of a sunny day: a yellow sun in the upper left, a house with a "
        "red roof, a blue door and two windows, a green tree to its right, and a person on the "
        "grass flying an orange kite.",
        fact="the scene has a sun, a red-roofed house, a tree and a person flying a kite",
        answers={
            "excellent": "The picture shows a sunny day in a simple drawing style. A yellow sun "
            "sits in the top left corner of a light blue sky. In the middle stands a small "
            "house with a red triangular roof, a blue door and two windows. To its right is "
            "a round green tree, and on the grass at the right a smiling person is flying an "
            "orange kite.",
            "thin": "A house with a red roof, a tree and a person flying a kite on a sunny day.",
            "partial": "There is a house with a red roof and a blue door, and a tree next to it. "
            "The sky is blue.",
            "flawed": "A night scene: a tall building with many lit windows, and a dog running on "
            "the grass under the moon.",
            "wrong": "This is a photograph of a city street with cars and traffic lights.",
        },
    ),
    Seed(
        task="Description",
        number=2,
        language="zh",
        image=THREE_SHAPES,
        variants=("描述图片。", "请描述这张图片的内容。", "这张图片上有什么元素？请详细说明。"),
        reference="图片中从左到右依次排列着三个图形：红色的圆形（下方标注START）、蓝色的正方形（标注"
        "MIDDLE）和绿色的三角形（标注END），背景为浅米色。",
        fact="图中从左到右是红色圆形、蓝色正方形和绿色三角形，分别标注START、MIDDLE、END",
        answers={
            "excellent": "图片背景为浅米色，从左到右排列着三个图形：第一个是红色的圆形，下方写着"
            "“START”；中间是蓝色的正方形，标注“MIDDLE”；右边是绿色的三角形，标注“END”。整体像是"
            "一个表示开始、中间和结束的流程示意图。",
            "thin": "图中有红色圆形、蓝色正方形和绿色三角形三个图形。",
            "partial": "图中有三个彩色图形，左边是红色圆形，右边是一个三角形。",
            "flawed": "图中有两个蓝色圆形和一个红色正方形，下面写着“STOP”。",
            "wrong": "这是一张风景照片，远处有山和湖泊。",
        },
    ),
    Seed(
        task="Recognition",
        number=1,
        language="en",
        image=NUMBERED_SHAPES,
        variants=(
            "Which shape is number 2, and what colour is it?",
            "Identify shape 2 in the picture: its form and colour.",
            "What is the second shape labelled '2'?",
        ),
        reference="Shape 2 is a purple triangle.",
        fact="shape 2 is a purple triangle",
        answers={
            "excellent": "Shape number 2, in the middle of the row, is a purple triangle pointing "
            "upwards. (Shape 1 is a yellow star and shape 3 a green circle.)",
            "thin": "A purple triangle.",
            "partial": "It is a triangle.",
            "flawed": "Shape 2 is a purple star.",
            "wrong": "Shape 2 is a green circle.",
        },
    ),
    Seed(
        task="Recognition",
        number=2,
        language="zh",
        image=CLOCK_440,
        variants=(
            "图中是什么物品？它显示的是几点？",
            "请识别图中的物体，并读出上面的时间。",
            "这是什么？现在几点了？",
        ),
        reference="图中是一个指针式时钟，红色短针（时针）在4和5之间，黑色长针（分针）指向8，"
        "显示的时间是4点40分。",
        fact="这是一个时钟，显示4点40分",
        answers={
            "excellent": "这是一个指针式的圆形时钟。红色的短针是时针，位于4和5之间；黑色的长针是"
            "分针，指向8，所以显示的时间是4点40分。",
            "thin": "是一个时钟，4点40分。",
            "partial": "这是一个时钟，大约是下午四点多。",
            "flawed": "这是一个时钟，显示8点20分。",
            "wrong": "这是一个指南针，指向东北方向。",
        },
    ),
    Seed(
        task="Counting",
        number=1,
        language="en",
        image=CIRCLES_AND_SQUARES,
        variants=(
            "How many red circles are there?",
            "Count the red circles in the image.",
            "What is the number of red circles in this picture?",
        ),
        reference="There are 7 red circles.",
        fact="there are 7 red circles",
        answers={
            "excellent": "There are 7 red circles in the picture (alongside 4 blue squares).",
            "thin": "7.",
            "partial": "About 7 red circles, maybe 6; some are hard to tell apart.",
            "flawed": "There are 4 red circles.",
            "wrong": "There are 11 red circles.",
        },
    ),
    Seed(
        task="Counting",
        number=2,
        language="zh",
        image=STARS_MIX,
        variants=(
            "图中一共有多少个星形？",
            "数一数图里有几个黄色的星星。",
            "请统计图中星形的数量。",
        ),
        reference="图中一共有5个黄色的星形。",
        fact="图中有5个星形",
        answers={
            "excellent": "图中一共有5个黄色的星形，另外还有3个绿色三角形和6个蓝色圆形。",
            "thin": "5个。",
            "partial": "大概有5到6个星形。",
            "flawed": "图中有3个星形。",
            "wrong": "图中有14个星形。",
        },
    ),
    Seed(
        task="OCR",
        number=1,
        language="en",
        image=RECEIPT,
        variants=(
            "Read out all the text on the receipt.",
            "Transcribe the text in this image.",
            "What is written on this receipt? Give every line.",
        ),
        reference="CITY BAKERY / Sourdough loaf 4.50 / 2 x Croissant 5.00 / Coffee 3.20 / "
        "TOTAL 12.70",
        fact="the receipt reads CITY BAKERY, Sourdough loaf 4.50, 2 x Croissant 5.00, Coffee 3.20, "
        "TOTAL 12.70",
        answers={
            "excellent": "CITY BAKERY\nSourdough loaf 4.50\n2 x Croissant 5.00\nCoffee 3.20\n"
            "TOTAL 12.70",
            "thin": "City Bakery: sourdough 4.50, croissants 5.00, coffee 3.20, total 12.70.",
            "partial": "CITY BAKERY\nSourdough loaf 4.50\nTOTAL 12.70",
            "flawed": "CITY BANK\nSour loaf 4.90\n2 x Crossword 3.00\nTOTAL 21.70",
            "wrong": "MENU\nPizza 9.00\nPasta 8.00",
        },
    ),
    Seed(
        task="OCR",
        number=2,
        language="zh",
        image=LIBRARY_NOTICE,
        variants=(
            "请识别图中的英文文字，并翻译成中文。",
            "图片上写了什么？请给出原文和中文翻译。",
            "请把图中的通知内容翻译成中文。",
        ),
        reference="原文：NOTICE. The library closes at 6 pm on Sunday, 3 December. Please return "
        "books in the box by the front door. 翻译：通知：图书馆将于12月3日（星期日）下午6点闭馆。"
        "请将图书归还至正门旁的还书箱。",
        fact="通知说图书馆12月3日星期日下午6点闭馆，还书请放入正门旁的箱子",
        answers={
            "excellent": "原文：NOTICE — The library closes at 6 pm on Sunday, 3 December. Please "
            "return books in the box by the front door.\n翻译：通知——图书馆将于12月3日（星期日）"
            "下午6点闭馆。请把图书归还到正门旁边的还书箱里。",
            "thin": "通知：图书馆12月3日周日下午6点关门，书请还到门口的箱子里。",
            "partial": "通知：图书馆星期日下午6点关门。",
            "flawed": "通知：图书馆12月13日上午9点开门，请在前台借书。",
            "wrong": "这是一张餐厅的菜单，上面写着今日特价。",
        },
    ),
    Seed(
        task="Meme",
        number=1,
        language="en",
        image=GYM_MEME,
        variants=(
            "Where is the joke in this picture?",
            "Explain why this meme is funny.",
            "What is the humour in this image?",
        ),
        reference="The meme contrasts expectation with reality: after a first week at the gym the "
        "person expected to look strong and triumphant, but in reality they are exhausted and "
        "need a walking stick. The exaggerated gap between hope and result is the joke.",
        fact="the joke is the gap between expecting to be strong after a week at the gym and "
        "actually being exhausted",
        answers={
            "excellent": "It is an 'expectation vs reality' joke. The left panel shows what the "
            "person hoped a first week at the gym would do: a strong figure flexing. The right "
            "panel shows what really happened: a sad, worn-out figure leaning on a walking stick. "
            "The humour is the exaggerated gap between the hoped-for result and the sore, tired "
            "reality that most beginners know.",
            "thin": "It compares expecting to get strong at the gym with actually being exhausted.",
            "partial": "The picture shows two people, one happy and one sad, after the gym.",
            "flawed": "The joke is that the gym is closed, so the person could not train.",
            "wrong": "It is an advertisement for a walking stick.",
        },
    ),
    Seed(
        task="Meme",
        number=2,
        language="zh",
        image=DEADLINE_MEME,
        variants=("这张图的笑点在哪里？", "请解释这个表情包为什么好笑。", "图中的幽默之处是什么？"),
        reference="这是关于拖延的玩笑：第一天觉得时间充裕、非常轻松，到了截止日期前一晚却一点都没"
        "完成、十分沮丧。前后心态的强烈反差让人会心一笑。",
        fact="笑点是拖延：第一天觉得时间充裕，截止前一晚却完全没做",
        answers={
            "excellent": "这是一个关于拖延症的表情包。左边写着“Day 1: plenty of time”，小人很开心，"
            "觉得时间很充裕；右边是“Last night: 0% done”，小人很沮丧，因为截止日期就在明天早上9点，"
            "可任务一点都没做。前后心态的强烈反差，正是很多人都有过的经历，所以很好笑。",
            "thin": "讽刺拖延：一开始觉得时间多，最后一晚什么都没做。",
            "partial": "图里有一个开心的人和一个难过的人。",
            "flawed": "笑点是这个人第一天就完成了所有任务。",
            "wrong": "这是一张关于体育比赛的海报。",
        },
    ),
    Seed(
        task="Knowledge",
        number=1,
        language="en",
        image=TRIANGLE_345,
        variants=(
            "Which theorem lets you find c in this figure, and who is it named after?",
            "Name the theorem that relates the sides of this triangle and its namesake.",
            "What rule connects a, b and c here? Who is it named after?",
        ),
        reference="The Pythagorean theorem: in a right triangle a^2 + b^2 = c^2, so c = 5 here. "
        "It is named after the ancient Greek mathematician Pythagoras of Samos (6th century BC).",
        fact="it is the Pythagorean theorem, named after Pythagoras",
        answers={
            "excellent": "The Pythagorean theorem: for a right triangle, a^2 + b^2 = c^2, where c "
            "is the hypotenuse. Here c = sqrt(4^2 + 3^2) = 5. It is named after Pythagoras of "
            "Samos, a Greek philosopher of the 6th century BC, though the relation was known "
            "earlier in Babylon and India.",
            "thin": "The Pythagorean theorem, after Pythagoras.",
            "partial": "It is the Pythagorean theorem, a^2 + b^2 = c^2.",
            "flawed": "Thales' theorem, named after Euclid; it gives c = 7.",
            "wrong": "Newton's second law, named after Isaac Newton.",
        },
    ),
    Seed(
        task="Knowledge",
        number=2,
        language="en",
        image=FORMULAS,
        variants=(
            "What are the everyday names of these three substances?",
            "Name the substances with these chemical formulas.",
            "What do the formulas 1-3 stand for?",
        ),
        reference="1. H2O is water, 2. NaCl is table salt (sodium chloride), 3. CO2 is carbon "
        "dioxide.",
        fact="H2O is water, NaCl is table salt and CO2 is carbon dioxide",
        answers={
            "excellent": "1. H2O is water. 2. NaCl is sodium chloride, i.e. table salt. 3. CO2 is "
            "carbon dioxide, the gas we breathe out and that plants take up.",
            "thin": "Water, salt, carbon dioxide.",
            "partial": "1 is water and 3 is carbon dioxide.",
            "flawed": "1 is hydrogen peroxide, 2 is sugar, 3 is carbon dioxide.",
            "wrong": "They are the names of three vitamins.",
        },
    ),
)
