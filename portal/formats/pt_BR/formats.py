"""Datas e números em português do Brasil (FORMAT_MODULE_PATH, portal/settings/locale.py): the same kinds as
portal/formats/en/formats.py, as a Brazilian university writes them (27/11/2026, 14:05, 1.234,5)."""

DATE_FORMAT = "d/m/Y"  # 27/11/2026
TIME_FORMAT = "H:i"  # 14:05
DATETIME_FORMAT = "d/m/Y H:i"  # 27/11/2026 14:05
SHORT_DATE_FORMAT = DATE_FORMAT
SHORT_DATETIME_FORMAT = DATETIME_FORMAT
MONTH_YEAR_FORMAT = r"F \d\e Y"  # novembro de 2026
DATE_INPUT_FORMATS = ["%d/%m/%Y", "%Y-%m-%d"]
TIME_INPUT_FORMATS = ["%H:%M", "%H:%M:%S"]
DATETIME_INPUT_FORMATS = ["%d/%m/%Y %H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%d/%m/%Y %H:%M:%S"]
FIRST_DAY_OF_WEEK = 1  # segunda-feira, como as cotas semanais
DECIMAL_SEPARATOR = ","
THOUSAND_SEPARATOR = "."
NUMBER_GROUPING = 3
